// Stage: one pipeline position: its layer range, its parameter buffer, and what it stores per
// micro-batch between forward and backward (all of it, only its input under recompute, or every
// layer's input under per-layer recompute), and the buffer updates of its micro-batches until the
// step applies them. Its input and output are the live sets of the cuts around it (Bundle): the
// values its layers save and read move through a value table per micro-batch, and their gradients
// are summed in the model graph's fixed order (docs/design/graph.md, "Networks that are not a
// chain").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "model/model_graph.h"
#include "nn/layer.h"
#include "nn/param_buffer.h"
#include "pipeline/bundle.h"
#include "pipeline/layer_times.h"
#include "plan/gradient_tree.h"
#include "plan/pipeline_config.h"
#include "plan/weight_groups.h"

namespace mpipe::pipeline {

class Stage {
 public:
  // `layers` are this stage's contiguous layers in global order; `recompute` is not kAuto (the
  // planner resolves it), nor is `weight_grads` (PipelinePlan::weight_grads), nor, under grouped,
  // `weight_group` (PipelinePlan::weight_group, 1..M). `graph` is the model's (null: a chain,
  // every layer reading only its predecessor's output).
  Stage(std::vector<std::unique_ptr<nn::Layer>> layers, plan::Recompute recompute,
        int num_micro_batches, plan::WeightGrads weight_grads = plan::WeightGrads::kAccumulate,
        std::shared_ptr<const model::ModelGraph> graph = nullptr, int weight_group = 0);
  // The values that cross the cut before this stage (its input bundle, in this order) and the
  // one after it (its output), as model::ModelGraph::live_set gives them.
  const std::vector<int>& input_values() const { return input_values_; }
  const std::vector<int>& output_values() const { return output_values_; }

  nn::ParamBuffer& params() { return *params_; }
  const nn::ParamBuffer& params() const { return *params_; }
  const std::vector<std::unique_ptr<nn::Layer>>& layers() const { return layers_; }

  // Readies the gradient buffer for a training step: zeroes the gradients of the layers that do
  // not writes_grads_first(); the others' first write of the step overwrites theirs (their
  // backwards then get LayerContext::grads_unset). Without it, every backward adds.
  void zero_grads_for_step();

  // Forward of micro-batch `micro_batch` in training mode: the input bundle (input_values()) to the
  // output bundle (output_values()); stores what its backward needs (the input only when that
  // micro-batch is recomputed).
  Bundle forward(int micro_batch, Bundle input, const nn::LayerContext& ctx);
  // Backward of `micro_batch`: recomputes its forward first if only the input was stored; under
  // per-layer recompute, walks the layers from last to first, re-running one layer's forward from
  // its kept input just before that layer's backward (and dropping the input after). Takes over
  // grad_output (the gradients of the output values that need one, in order; no copy) and frees
  // each once it is used. Returns the gradients of the input values that need one (none on the
  // stage that holds layer 0). Frees the stash.
  Bundle backward(int micro_batch, Bundle grad_output, const nn::LayerContext& ctx);
  // The backward split in two (zero-bubble schedules): backward_input is backward (returns the
  // same input gradient, frees the stash) except that each layer that splits its backward
  // (nn::Layer::splits_backward) leaves its parameter gradients to backward_weight, which the
  // stage keeps that layer's output gradient and saved tensors for (counted in stored_bytes);
  // backward_weight of the same micro-batch adds them, last layer first, calling the layer hook
  // (backward) after every layer, and frees what was kept. Layers that do not split do all their
  // work in backward_input. Call backward_weight in ascending micro-batch order.
  Bundle backward_input(int micro_batch, Bundle grad_output, const nn::LayerContext& ctx);
  void backward_weight(int micro_batch, const nn::LayerContext& ctx);
  // Completes the gradients the backwards of the weight-gradient group whose last micro-batch is
  // `last_micro_batch` deferred (Layer::finish_step_grads), last layer first, calling the layer
  // hook (backward) after each; once per group, in ascending group order, after the group's last
  // backward (its W where backwards are split). `ctx` is that backward's.
  void finish_step_grads(const nn::LayerContext& ctx, int last_micro_batch);
  // Whether backwards defer gradients to finish_step_grads (batched or grouped weight gradients
  // in groups of more than one micro-batch): a layer's gradient is then complete only after the
  // last group's.
  bool defers_grads() const { return groups_.deferred(); }
  // Forward in evaluation mode; stores nothing. `input` is left as it was given.
  Bundle evaluate(Bundle& input, const nn::LayerContext& ctx);

  // Deferred buffer updates (nn::Layer::buffer_update_size): forward() keeps the update of each
  // micro-batch's first forward over all layers, buffer_update_size() floats (none when 0).
  int64_t buffer_update_size() const;
  // The kept updates in ascending micro-batch order, [micro-batches, buffer_update_size()]; clears
  // them. Every forward's update must be taken before that micro-batch is forwarded again.
  std::vector<float> take_buffer_updates();
  // Applies updates laid out as take_buffer_updates() returns them (any number of micro-batches,
  // of this or other replicas), in the order given.
  void apply_buffer_updates(std::span<const float> updates);

  // Bytes of activations stored for pending backwards, now and at most since reset_peak().
  size_t stored_bytes() const { return stored_bytes_; }
  size_t peak_stored_bytes() const { return peak_stored_bytes_; }
  void reset_peak() { peak_stored_bytes_ = stored_bytes_; }
  bool recomputes(int micro_batch) const;

  // Called after each layer's forward (recomputes and evaluation included) and backward with the
  // layer's global index; the executor drives MPI progress and starts gradient reductions there.
  using LayerHook = std::function<void(int global_layer, bool backward)>;
  void set_layer_hook(LayerHook hook) { layer_hook_ = std::move(hook); }
  // Where each layer's training ops (forward, backward, recompute, weight gradients) add their
  // wall time; null: not timed.
  void set_layer_times(LayerTimes* times) { layer_times_ = times; }

 private:
  // Values by their index in the model graph.
  using ValueTable = std::map<int, Tensor>;
  struct Stash {
    Bundle input;                  // kept when the forward is recomputed
    std::vector<nn::Saved> saved;  // one per layer, kept when it is not
    ValueTable layer_inputs;       // under per-layer recompute: every value a layer here reads
    size_t bytes() const;
  };
  // What a micro-batch's backward_input kept for its backward_weight: per layer that splits its
  // backward, in descending layer order, its index, output gradient and saved tensors.
  struct WeightWork {
    std::vector<size_t> layers;
    std::vector<Tensor> grad_outputs;
    std::vector<nn::Saved> saved;
    size_t bytes() const;
  };
  // The backwards of a stash's layers, last first; with `work`, a layer that splits its backward
  // runs only backward_input and moves its output gradient and saved tensors into `work`.
  // Under per-layer recompute, each layer's forward is re-run from its kept inputs just before
  // its backward.
  Bundle backward_layers(Stash& stash, Bundle grad_output, const nn::LayerContext& ctx,
                         int micro_batch, WeightWork* work);
  // Runs `contribute`, which adds layer i's parameter gradients of `micro_batch`: under
  // weight_grads: tree, inside the gradient tree's open and close.
  template <typename Contribute>
  void add_layer_grads(size_t i, int micro_batch, Contribute contribute);
  // Layer i's backward (whole, or its input part into `work`); returns the gradients of its
  // inputs: the main one, then each read.
  std::vector<Tensor> layer_backward(size_t i, Tensor grad, nn::Saved& saved,
                                     const nn::LayerContext& ctx, int micro_batch,
                                     WeightWork* work);
  // Layer i's forward from the values it reads in `values`; with `consume`, hands it its main
  // input to keep (Layer::forward_consuming), taken out of `values`.
  nn::Forward layer_forward(size_t i, ValueTable& values, const nn::LayerContext& ctx,
                            bool consume);
  // The graph's index of layer i's main input and of its output.
  std::span<const int> layer_inputs(size_t i) const;
  int layer_output(size_t i) const;
  bool is_output_value(int value) const;
  // Whether `value`'s last reader is layer i (so i may take it over: nothing after needs it).
  bool last_read_by(int value, size_t i) const;
  // Whether a layer of this stage reads `value`, and the first that does (its index here).
  bool read_here(int value) const;
  size_t first_reader_here(int value) const;
  // The context of layer `layer`'s backward of `micro_batch`.
  nn::LayerContext backward_context(const nn::LayerContext& ctx, size_t layer,
                                    int micro_batch) const;
  // What run_forward does with its input bundle: takes it (a value that is also an output is
  // moved on), keeps it (`input` as it was given after the call: such a value is copied), or
  // keeps it for a recompute, which builds no output bundle.
  enum class InputUse { kTake, kKeep, kRecompute };
  // Runs all layers on `input`; appends each layer's Saved to `saved` and its buffer update to
  // `update` unless they are null. Returns the output bundle (empty for kRecompute). The input's
  // values are held to the end, as a chain's stage holds its input.
  Bundle run_forward(Bundle& input, InputUse use, const nn::LayerContext& ctx,
                     std::vector<nn::Saved>* saved, std::vector<float>* update = nullptr);
  // Runs all layers, keeping in `kept` every value a layer of this stage reads (no copies but of
  // a value that is also an output); returns the output bundle.
  Bundle forward_per_layer(Bundle input, const nn::LayerContext& ctx, ValueTable& kept,
                           std::vector<float>& update);

  std::vector<std::unique_ptr<nn::Layer>> layers_;
  std::shared_ptr<const model::ModelGraph> graph_;
  std::vector<int> input_values_;
  std::vector<int> output_values_;
  std::unique_ptr<nn::ParamBuffer> params_;
  plan::Recompute recompute_;
  int num_micro_batches_;
  plan::WeightGrads weight_grads_;
  plan::WeightGroups groups_;
  bool grads_unset_ = false;  // zero_grads_for_step() left the overwriting layers' grads alone
  std::optional<plan::GradientTree> gradient_tree_;  // weight_grads: tree
  std::map<int, Stash> stash_;
  std::map<int, WeightWork> weight_work_;             // per micro-batch, from its I to its W
  std::map<int, std::vector<float>> buffer_updates_;  // per micro-batch, until taken
  size_t stored_bytes_ = 0;
  size_t peak_stored_bytes_ = 0;
  LayerHook layer_hook_;
  LayerTimes* layer_times_ = nullptr;
};

}  // namespace mpipe::pipeline
