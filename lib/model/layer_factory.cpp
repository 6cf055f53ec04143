// The table from YAML layer types to layer constructors.
#include "model/layer_factory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <map>

#include "core/error.h"
#include "model/layer_attrs.h"
#include "nn/activation.h"
#include "nn/dropout.h"
#include "nn/flatten.h"
#include "nn/linear.h"

namespace mpipe::model {
namespace {

using Builder = std::function<std::unique_ptr<nn::Layer>(LayerAttrs&, const Shape&, int)>;

std::unique_ptr<nn::Layer> linear(LayerAttrs& a, const Shape& in, int i) {
  const int64_t units = a.integer("units", 1);
  const bool bias = a.flag("bias", true);
  const std::string init = a.text("init", "kaiming", {"kaiming", "xavier"});
  return std::make_unique<nn::Linear>(
      i, in, units, bias, init == "xavier" ? nn::Init::kXavierUniform : nn::Init::kKaimingUniform);
}

Builder activation(kernels::EltwiseKind kind) {
  return [kind](LayerAttrs&, const Shape& in, int i) {
    return std::make_unique<nn::Activation>(i, in, kind);
  };
}

std::unique_ptr<nn::Layer> dropout(LayerAttrs& a, const Shape& in, int i) {
  return std::make_unique<nn::Dropout>(i, in, a.number("rate", 0.1, 0.0, 0.999));
}

std::unique_ptr<nn::Layer> flatten(LayerAttrs&, const Shape& in, int i) {
  return std::make_unique<nn::Flatten>(i, in);
}

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"linear", linear},
      {"relu", activation(kernels::EltwiseKind::kRelu)},
      {"gelu", activation(kernels::EltwiseKind::kGelu)},
      {"tanh", activation(kernels::EltwiseKind::kTanh)},
      {"dropout", dropout},
      {"flatten", flatten},
  };
  return table;
}

}  // namespace

std::vector<std::string> known_layer_kinds() {
  std::vector<std::string> kinds;
  for (const auto& [kind, builder] : builders()) kinds.push_back(kind);
  return kinds;
}

std::unique_ptr<nn::Layer> make_layer(const LayerSpec& spec, const Shape& input, int global_index) {
  auto it = builders().find(spec.kind);
  check_input(it != builders().end(), "{}.type: unknown layer type '{}' (known: {})",
              spec.where.prefix(), spec.kind, fmt::join(known_layer_kinds(), ", "));
  LayerAttrs attrs(spec);
  std::unique_ptr<nn::Layer> layer;
  try {
    layer = it->second(attrs, input, global_index);
  } catch (const InputError& e) {
    // Attribute errors already carry their own line; shape errors from the layer get the
    // entry's line and the layer index.
    const std::string message = e.what();
    if (message.starts_with(spec.where.file + ":")) throw;
    throw InputError(fmt::format("{} ({}, input {}): {}", spec.where.prefix(), spec.kind,
                                 input, message));
  }
  attrs.finish();
  return layer;
}

}  // namespace mpipe::model
