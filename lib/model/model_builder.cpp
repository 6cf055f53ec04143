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
  if (tied) {  // each copy of the tied matrix [vocab, dim] is the first embedding's
    n -= static_cast<int64_t>(tied->copies.size()) * tied->matrix.numel();
  }
  return n;
}

ModelInputs one_input(const Shape& shape) { return {{.name = kDataInputName, .shape = shape}}; }

ModelGraph model_graph(const ModelSpec& spec, const ModelInputs& inputs) {
  std::vector<std::string> names;
  for (const ModelInput& input : inputs) names.push_back(input.name);
  return ModelGraph(spec, names);
}

Shape ModelPlan::value_shape(int value) const {
  const GraphValue& v = graph.values().at(static_cast<size_t>(value));
  return v.producer < 0 ? inputs.at(static_cast<size_t>(value)).shape
                        : layers.at(static_cast<size_t>(v.producer)).output;
}

std::vector<Shape> ModelPlan::live_shapes(int cut) const {
  std::vector<Shape> shapes;
  for (int value : graph.live_set(cut)) shapes.push_back(value_shape(value));
  return shapes;
}

std::vector<Shape> ModelPlan::live_grad_shapes(int cut) const {
  std::vector<Shape> shapes;
  for (int value : graph.live_set(cut)) {
    if (graph.values()[static_cast<size_t>(value)].needs_grad()) {
      shapes.push_back(value_shape(value));
    }
  }
  return shapes;
}

namespace {

int64_t bytes_of(const std::vector<Shape>& shapes) {
  int64_t bytes = 0;
  for (const Shape& shape : shapes) {
    bytes = checked_add(bytes, checked_mul(shape.numel(), sizeof(float), "cut bytes"), "cut bytes");
  }
  return bytes;
}

}  // namespace

int64_t ModelPlan::live_bytes(int cut) const { return bytes_of(live_shapes(cut)); }

int64_t ModelPlan::live_grad_bytes(int cut) const { return bytes_of(live_grad_shapes(cut)); }

std::vector<std::unique_ptr<nn::Layer>> build_layers(const ModelSpec& spec, const Shape& input,
                                                     int begin, int end) {
  return build_layers(spec, one_input(input), begin, end);
}

ModelPlan plan_model(const ModelSpec& spec, const Shape& input) {
  return plan_model(spec, one_input(input));
}

std::vector<std::unique_ptr<nn::Layer>> build_layers(const ModelSpec& spec,
                                                     const ModelInputs& inputs, int begin,
                                                     int end) {
  const int num_layers = static_cast<int>(spec.layers.size());
  check(0 <= begin && begin <= end && end <= num_layers, "layer range [{}, {}) of {} layers", begin,
        end, num_layers);
  std::vector<std::unique_ptr<nn::Layer>> layers;
  const ModelContext context = model_context(spec);
  const ModelGraph graph = model_graph(spec, inputs);
  std::vector<Shape> outputs;  // of layers 0 .. i-1
  for (int i = 0; i < end; ++i) {
    const LayerSpec& layer_spec = spec.layers[static_cast<size_t>(i)];
    const auto shape_of = [&](int value) {
      const int producer = graph.values()[static_cast<size_t>(value)].producer;
      return producer < 0 ? inputs[static_cast<size_t>(value)].shape
                          : outputs[static_cast<size_t>(producer)];
    };
    const auto consumed = graph.inputs_of(i);
    const Shape shape = shape_of(consumed.front());
    std::vector<Shape> reads;
    for (int value : consumed.subspan(1)) reads.push_back(shape_of(value));
    try {
      auto layer = make_layer(layer_spec, shape, reads, i, context);
      outputs.push_back(layer->output_shape());
      outputs.back().numel();  // its size must be countable too
      if (i >= begin) layers.push_back(std::move(layer));
    } catch (const SizeError& e) {
      throw InputError(
          fmt::format("{} ({}): {}", layer_spec.where.prefix(), layer_spec.kind, e.what()));
    }
  }
  return layers;
}

ModelPlan plan_model(const ModelSpec& spec, const ModelInputs& inputs) {
  ModelPlan plan{.inputs = inputs,
                 .layers = {},
                 .tied = std::nullopt,
                 .graph = model_graph(spec, inputs),
                 .loss_tensor_bytes = {}};
  auto layers = build_layers(spec, inputs, 0, static_cast<int>(spec.layers.size()));
  for (const auto& layer : layers) {
    const int i = layer->global_index();
    const LayerSpec& layer_spec = spec.layers[static_cast<size_t>(i)];
    try {
      plan.layers.push_back(plan_layer(*layer, plan.value_shape(plan.graph.inputs_of(i).front())));
    } catch (const SizeError& e) {
      throw InputError(
          fmt::format("{} ({}): {}", layer_spec.where.prefix(), layer_spec.kind, e.what()));
    }
  }
  plan.tied = find_tied_weights(spec, layers);
  // (The loss reads the model's output: the last layer's.)
  plan.loss_tensor_bytes =
      nn::make_loss(spec.loss)->training_tensor_bytes(plan.layers.back().output);
  try {
    plan.num_params();  // the total must be countable too
  } catch (const SizeError& e) {
    throw InputError(fmt::format("{}: {}", spec.where.prefix(), e.what()));
  }
  return plan;
}

}  // namespace mpipe::model
