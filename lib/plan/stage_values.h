// Stage values: what a stage of a model that is not a chain holds beside each layer's own tensors,
// walked layer by layer as pipeline::Stage runs them (its value table in a forward, its gradient
// table in a backward), for the memory model. A chain's walk is empty: its layers' own tensors are
// everything (docs/design/graph.md, "Networks that are not a chain", the memory walk).
#pragma once

#include <functional>
#include <vector>

#include "model/model_builder.h"

namespace mpipe::plan {

// The model's graph in bytes: each value's (per example), producer, readers and whether it takes a
// gradient; what each layer consumes and each cut's live set (model::ModelGraph). Empty for a
// chain.
struct ValueCosts {
  struct Value {
    double bytes = 0.0;       // per example
    int producer = -1;        // -1: a data input
    bool needs_grad = false;  // a layer's output
    int last_use = -1;        // the last layer consuming it (num_layers: the loss)
  };
  std::vector<Value> values;
  std::vector<std::vector<int>> layer_inputs;  // per layer: its main input, then its reads
  std::vector<std::vector<int>> live_sets;     // per cut 0 .. num_layers

  bool empty() const { return values.empty(); }
};

// The graph of `plan` in bytes; empty when the model is a chain (ModelGraph::is_chain).
ValueCosts value_costs(const model::ModelPlan& plan);

// One stage's walk, per layer of the stage (index: global layer - begin), in bytes as the memory
// model counts them (each value's tensor a block: `block` of its bytes per micro-batch).
struct StageValues {
  // The stage's input and output, as the values they hold (the stage keeps its input when it
  // recomputes) and as their packed message; and the gradients of those that take one.
  double input = 0.0, input_message = 0.0, input_grads = 0.0, input_grad_message = 0.0;
  double output = 0.0, output_message = 0.0, output_grads = 0.0, output_grad_message = 0.0;
  // The input's values beside the first layer's main input (which a chain's model counts).
  double input_beside_main = 0.0;
  // Whether layer i is handed its main input (nothing after it reads that value): a chain's every
  // layer but the stage's first.
  std::vector<bool> consumed;
  // Values the value table holds during layer i's forward beyond its main input and its output,
  // those of the stage's input not counted (the input is held as a whole by whoever holds it).
  std::vector<double> forward_held;
  // Under per-layer recompute: the values the stage keeps for layer i's recompute that no layer
  // before it in the stage reads (so the kept values of layers [begin, i] are these summed), and
  // the values its first forward holds at layer i (all it has made so far, and its input).
  std::vector<double> first_kept;
  std::vector<double> per_layer_forward_held;
  // Gradients the gradient table holds during layer i's backward beyond its output gradient: the
  // sums of later readers' gradients not yet handed back. (The gradients the layer returns, of its
  // main input and of what it reads, are its backward's own: nn::LayerNeeds.)
  std::vector<double> backward_held;
};

// The walk of layers [begin, end) of `values` (non-empty), each tensor counted as `block` of its
// bytes (per micro-batch) rounds it.
StageValues walk_stage(const ValueCosts& values, int begin, int end,
                       const std::function<double(double bytes_per_example)>& block);

}  // namespace mpipe::plan
