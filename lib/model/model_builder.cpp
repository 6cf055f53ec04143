// Shape inference over the layer list and construction of a stage's layer range.
#include "model/model_builder.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "nn/loss.h"

namespace mpipe::model {
namespace {

// Bytes of `specs` in a ParamBuffer: every tensor starts on a 64-byte boundary.
int64_t aligned_bytes(const std::vector<nn::ParamSpec>& specs) {
  constexpr int64_t kAlign = 64;
  int64_t bytes = 0;
  for (const nn::ParamSpec& spec : specs) {
    const int64_t tensor = checked_mul(spec.shape.numel(), sizeof(float), "parameter bytes");
    bytes = checked_add(bytes, checked_add(tensor, kAlign - 1, "parameter bytes") / kAlign * kAlign,
                        "parameter bytes");
  }
  return bytes;
}

// One layer's row of the plan; SizeError when a count overflows.
LayerPlan plan_layer(const nn::Layer& layer, const Shape& input) {
  LayerPlan entry{
      .index = layer.global_index(),
      .kind = std::string(layer.kind()),
      .input = input,
      .output = layer.output_shape(),
      .num_params = 0,
      .param_bytes = 0,
      .buffer_bytes = 0,
      .forward_flops = layer.forward_flops_per_example(),
      .output_bytes = checked_mul(layer.output_shape().numel(), sizeof(float), "output bytes"),
      .needs = layer.needs()};
  for (const nn::ParamSpec& param : layer.param_specs()) {
    entry.num_params = checked_add(entry.num_params, param.shape.numel(), "parameter count");
  }
  entry.param_bytes = aligned_bytes(layer.param_specs());
  entry.buffer_bytes = aligned_bytes(layer.buffer_specs());
  return entry;
}

}  // namespace

ModelContext model_context(const ModelSpec& spec) {
  ModelContext context;
  if (spec.init == ModelInit::kGpt2) {
    const auto blocks =
        std::count_if(spec.layers.begin(), spec.layers.end(),
                      [](const LayerSpec& l) { return l.kind == "transformer_block"; });
    if (blocks > 0) {
      context.residual_std =
          static_cast<float>(0.02 / std::sqrt(2.0 * static_cast<double>(blocks)));
    }
  }
  return context;
}

int64_t ModelPlan::num_params() const {
  int64_t n = 0;
  for (const LayerPlan& layer : layers) n = checked_add(n, layer.num_params, "parameter count");
  if (tied) {  // the head's copy of the tied matrix [vocab, dim] is the embedding's
    const LayerPlan& head = layers[static_cast<size_t>(tied->head)];
    n -= head.input[head.input.rank() - 1] * head.output[head.output.rank() - 1];
  }
  return n;
}

std::vector<std::unique_ptr<nn::Layer>> build_layers(const ModelSpec& spec, const Shape& input,
                                                     int begin, int end) {
  const int num_layers = static_cast<int>(spec.layers.size());
  check(0 <= begin && begin <= end && end <= num_layers, "layer range [{}, {}) of {} layers", begin,
        end, num_layers);
  std::vector<std::unique_ptr<nn::Layer>> layers;
  const ModelContext context = model_context(spec);
  Shape shape = input;
  for (int i = 0; i < end; ++i) {
    const LayerSpec& layer_spec = spec.layers[static_cast<size_t>(i)];
    try {
      auto layer = make_layer(layer_spec, shape, i, context);
      shape = layer->output_shape();
      shape.numel();  // its size must be countable too
      if (i >= begin) layers.push_back(std::move(layer));
    } catch (const SizeError& e) {
      throw InputError(
          fmt::format("{} ({}): {}", layer_spec.where.prefix(), layer_spec.kind, e.what()));
    }
  }
  return layers;
}

ModelPlan plan_model(const ModelSpec& spec, const Shape& input) {
  ModelPlan plan{.input = input, .layers = {}, .tied = std::nullopt, .loss_tensor_bytes = {}};
  auto layers = build_layers(spec, input, 0, static_cast<int>(spec.layers.size()));
  Shape shape = input;
  for (const auto& layer : layers) {
    const LayerSpec& layer_spec = spec.layers[static_cast<size_t>(layer->global_index())];
    try {
      plan.layers.push_back(plan_layer(*layer, shape));
    } catch (const SizeError& e) {
      throw InputError(
          fmt::format("{} ({}): {}", layer_spec.where.prefix(), layer_spec.kind, e.what()));
    }
    shape = plan.layers.back().output;
  }
  plan.tied = find_tied_weights(spec, layers);
  plan.loss_tensor_bytes = nn::make_loss(spec.loss)->training_tensor_bytes(shape);
  try {
    plan.num_params();  // the total must be countable too
  } catch (const SizeError& e) {
    throw InputError(fmt::format("{}: {}", spec.where.prefix(), e.what()));
  }
  return plan;
}

}  // namespace mpipe::model
