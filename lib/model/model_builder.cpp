// Shape inference over the layer list and construction of a stage's layer range.
#include "model/model_builder.h"

#include "core/error.h"
#include "model/layer_factory.h"

namespace mpipe::model {

int64_t ModelPlan::num_params() const {
  int64_t n = 0;
  for (const LayerPlan& layer : layers) n += layer.num_params;
  return n;
}

std::vector<std::unique_ptr<nn::Layer>> build_layers(const ModelSpec& spec, const Shape& input,
                                                     int begin, int end) {
  const int num_layers = static_cast<int>(spec.layers.size());
  check(0 <= begin && begin <= end && end <= num_layers, "layer range [{}, {}) of {} layers", begin,
        end, num_layers);
  std::vector<std::unique_ptr<nn::Layer>> layers;
  Shape shape = input;
  for (int i = 0; i < end; ++i) {
    auto layer = make_layer(spec.layers[static_cast<size_t>(i)], shape, i);
    shape = layer->output_shape();
    if (i >= begin) layers.push_back(std::move(layer));
  }
  return layers;
}

ModelPlan plan_model(const ModelSpec& spec, const Shape& input) {
  ModelPlan plan{.input = input, .layers = {}};
  auto layers = build_layers(spec, input, 0, static_cast<int>(spec.layers.size()));
  Shape shape = input;
  for (const auto& layer : layers) {
    LayerPlan entry{
        .index = layer->global_index(),
        .kind = std::string(layer->kind()),
        .input = shape,
        .output = layer->output_shape(),
        .num_params = 0,
        .forward_flops = layer->forward_flops_per_example(),
        .output_bytes = layer->output_shape().numel() * static_cast<int64_t>(sizeof(float))};
    for (const nn::ParamSpec& param : layer->param_specs()) entry.num_params += param.shape.numel();
    shape = entry.output;
    plan.layers.push_back(std::move(entry));
  }
  return plan;
}

}  // namespace mpipe::model
