// The table from YAML layer types to layer constructors.
#include "model/layer_factory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <map>

#include "core/error.h"
#include "model/layer_attrs.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/batch_norm2d.h"
#include "nn/conv2d.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/flatten.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/pooling.h"
#include "nn/residual_block.h"
#include "nn/separable_cell.h"
#include "nn/transformer_block.h"

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

// Channels of a [C, H, W] input, or 0 when the input is not an image (the layer reports it).
int64_t input_channels(const Shape& in) { return in.rank() == 3 ? in[0] : 0; }

std::unique_ptr<nn::Layer> conv2d(LayerAttrs& a, const Shape& in, int i) {
  const int64_t channels = a.integer("channels", 1);
  const int64_t kernel = a.integer("kernel", 1);
  const int64_t stride = a.integer("stride", 1, 1);
  const int64_t padding = a.integer("padding", 0, 0);
  const int64_t dilation = a.integer("dilation", 1, 1);
  const int64_t groups = a.integer("groups", 1, 1);
  const bool bias = a.flag("bias", true);
  return std::make_unique<nn::Conv2d>(i, in, channels, kernel, stride, padding, dilation, groups,
                                      bias);
}

std::unique_ptr<nn::Layer> batch_norm2d(LayerAttrs& a, const Shape& in, int i) {
  const double momentum = a.number("momentum", 0.1, 0.0, 1.0);
  const double eps = a.number("eps", 1e-5, 1e-12, 1.0);
  return std::make_unique<nn::BatchNorm2d>(i, in, momentum, eps);
}

std::unique_ptr<nn::Layer> max_pool2d(LayerAttrs& a, const Shape& in, int i) {
  const int64_t kernel = a.integer("kernel", 1);
  const int64_t stride = a.integer("stride", kernel, 1);
  const int64_t padding = a.integer("padding", 0, 0);
  return std::make_unique<nn::MaxPool2d>(i, in, kernel, stride, padding);
}

std::unique_ptr<nn::Layer> avg_pool2d(LayerAttrs& a, const Shape& in, int i) {
  const int64_t kernel = a.integer("kernel", 1);
  const int64_t stride = a.integer("stride", kernel, 1);
  const int64_t padding = a.integer("padding", 0, 0);
  const bool count_include_pad = a.flag("count_include_pad", true);
  return std::make_unique<nn::AvgPool2d>(i, in, kernel, stride, padding, count_include_pad);
}

std::unique_ptr<nn::Layer> global_avg_pool(LayerAttrs&, const Shape& in, int i) {
  return std::make_unique<nn::GlobalAvgPool>(i, in);
}

std::unique_ptr<nn::Layer> residual_block(LayerAttrs& a, const Shape& in, int i) {
  const int64_t channels = a.integer("channels", 1);
  const int64_t stride = a.integer("stride", 1, 1);
  const bool bottleneck = a.flag("bottleneck", false);
  return std::make_unique<nn::ResidualBlock>(i, in, channels, stride, bottleneck);
}

std::unique_ptr<nn::Layer> separable_cell(LayerAttrs& a, const Shape& in, int i) {
  const int64_t channels = a.integer("channels", input_channels(in), 1);
  const int64_t kernel = a.integer("kernel", 3, 1);
  const int64_t stride = a.integer("stride", 1, 1);
  return std::make_unique<nn::SeparableCell>(i, in, channels, kernel, stride);
}

std::unique_ptr<nn::Layer> embedding(LayerAttrs& a, const Shape& in, int i) {
  const int64_t vocab = a.integer("vocab", 2);
  const int64_t dim = a.integer("dim", 1);
  const int64_t max_len = a.integer("max_len", in.rank() == 1 ? in[0] : 1, 1);
  return std::make_unique<nn::Embedding>(i, in, vocab, dim, max_len);
}

std::unique_ptr<nn::Layer> layer_norm(LayerAttrs& a, const Shape& in, int i) {
  return std::make_unique<nn::LayerNorm>(i, in, a.number("eps", 1e-5, 1e-12, 1.0));
}

std::unique_ptr<nn::Layer> attention(LayerAttrs& a, const Shape& in, int i) {
  const int64_t heads = a.integer("heads", 1);
  const double rate = a.number("dropout", 0.0, 0.0, 0.999);
  return std::make_unique<nn::CausalSelfAttention>(i, in, heads, rate);
}

std::unique_ptr<nn::Layer> transformer_block(LayerAttrs& a, const Shape& in, int i) {
  const int64_t heads = a.integer("heads", 1);
  const int64_t mlp_ratio = a.integer("mlp_ratio", 4, 1);
  const double rate = a.number("dropout", 0.0, 0.0, 0.999);
  return std::make_unique<nn::TransformerBlock>(i, in, heads, mlp_ratio, rate);
}

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"linear", linear},
      {"relu", activation(kernels::EltwiseKind::kRelu)},
      {"gelu", activation(kernels::EltwiseKind::kGelu)},
      {"tanh", activation(kernels::EltwiseKind::kTanh)},
      {"dropout", dropout},
      {"flatten", flatten},
      {"conv2d", conv2d},
      {"batch_norm2d", batch_norm2d},
      {"max_pool2d", max_pool2d},
      {"avg_pool2d", avg_pool2d},
      {"global_avg_pool", global_avg_pool},
      {"residual_block", residual_block},
      {"separable_cell", separable_cell},
      {"embedding", embedding},
      {"layer_norm", layer_norm},
      {"attention", attention},
      {"transformer_block", transformer_block},
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
  } catch (const AttributeError&) {
    throw;  // already names the attribute's own line
  } catch (const InputError& e) {
    // A shape error from the layer: name the entry's line, the layer index and the input.
    throw InputError(
        fmt::format("{} ({}, input {}): {}", spec.where.prefix(), spec.kind, input, e.what()));
  }
  attrs.finish();
  return layer;
}

}  // namespace mpipe::model
