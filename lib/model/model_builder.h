// Model builder: turns a ModelSpec into layers with shapes inferred and checked layer by layer.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "model/layer_factory.h"
#include "model/layer_spec.h"
#include "model/model_graph.h"
#include "model/tied_weights.h"
#include "nn/layer.h"

namespace mpipe::model {

// One layer as planned: its global index, kind, shapes of one example, size, cost and needs.
struct LayerPlan {
  int index = 0;
  std::string kind;
  Shape input;
  Shape output;
  int64_t num_params = 0;
  int64_t param_bytes = 0;     // trainable values as ParamBuffer lays them out (64-byte aligned)
  int64_t buffer_bytes = 0;    // non-trainable buffers, laid out the same way
  double forward_flops = 0.0;  // per example
  int64_t output_bytes = 0;    // per example: the activation this layer hands on
  nn::LayerNeeds needs = {};   // what its forward keeps and its forward and backward allocate
};

// One data input as the model sees it: the name its layers read it by (`input:`, `read:`) and one
// example's shape. Data with one input names it kDataInputName.
struct ModelInput {
  std::string name;
  Shape shape;
};
using ModelInputs = std::vector<ModelInput>;

// The one input of data that has one: {kDataInputName, shape}.
ModelInputs one_input(const Shape& shape);

struct ModelPlan {
  ModelInputs inputs;
  std::vector<LayerPlan> layers;
  std::optional<TiedWeights> tied;  // the layers that share the first embedding's matrix
  ModelGraph graph;                 // the values layers save and read; each cut's live set
  // What the loss holds beside the model's output while it computes its gradient, tensor by
  // tensor in bytes per example (nn::Loss::training_tensor_bytes).
  std::vector<double> loss_tensor_bytes = {};
  int64_t num_params() const;  // distinct trainable values: a tied matrix counts once
  // One example's shape of graph value `value` (a data input's or a layer's output).
  Shape value_shape(int value) const;
  // One example's shape of each value of cut `cut`'s live set (ModelGraph::live_set), and of
  // each that needs a gradient: what crosses the cut forward and backward.
  std::vector<Shape> live_shapes(int cut) const;
  std::vector<Shape> live_grad_shapes(int cut) const;
  // Their bytes, one example's.
  int64_t live_bytes(int cut) const;
  int64_t live_grad_bytes(int cut) const;
};

// The graph of `spec` over the data inputs `inputs` (in their order); InputError on a mistake.
ModelGraph model_graph(const ModelSpec& spec, const ModelInputs& inputs);

// What every layer of `spec` is built with from the model as a whole: model.init: gpt2 scales the
// residual output projections' std to 0.02 / sqrt(2 · the number of transformer_block layers).
ModelContext model_context(const ModelSpec& spec);

// Builds layers [begin, end) of the model (global indices begin..end-1). Every layer is
// constructed to infer its input shape, which is cheap: layers allocate nothing until bound.
// Errors name the YAML file, line and layer: "exp.yaml:12: model.layers[3] (linear): ...".
std::vector<std::unique_ptr<nn::Layer>> build_layers(const ModelSpec& spec,
                                                     const ModelInputs& inputs, int begin, int end);

ModelPlan plan_model(const ModelSpec& spec, const ModelInputs& inputs);

// The same for data with one input (one_input(input)).
std::vector<std::unique_ptr<nn::Layer>> build_layers(const ModelSpec& spec, const Shape& input,
                                                     int begin, int end);
ModelPlan plan_model(const ModelSpec& spec, const Shape& input);

}  // namespace mpipe::model
