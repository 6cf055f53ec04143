// Stage: one pipeline position: its layer range, its parameter buffer, and what it stores per
// micro-batch between forward and backward (all of it, only its input under recompute, or every
// layer's input under per-layer recompute), and the buffer updates of its micro-batches until the
// step applies them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "nn/layer.h"
#include "nn/param_buffer.h"
#include "pipeline/gradient_tree.h"
#include "pipeline/layer_times.h"
#include "pipeline/pipeline_config.h"

namespace mpipe::pipeline {

class Stage {
 public:
  // `layers` are this stage's contiguous layers in global order; `recompute` is not kAuto (the
  // planner resolves it), nor is `weight_grads` (resolve_weight_grads).
  Stage(std::vector<std::unique_ptr<nn::Layer>> layers, Recompute recompute, int num_micro_batches,
        WeightGrads weight_grads = WeightGrads::kAccumulate);

  nn::ParamBuffer& params() { return *params_; }
  const nn::ParamBuffer& params() const { return *params_; }
  const std::vector<std::unique_ptr<nn::Layer>>& layers() const { return layers_; }

  // Readies the gradient buffer for a training step: zeroes the gradients of the layers that do
  // not writes_grads_first(); the others' first write of the step overwrites theirs (their
  // backwards then get LayerContext::grads_unset). Without it, every backward adds.
  void zero_grads_for_step();

  // Forward of micro-batch `micro_batch` in training mode; stores what its backward needs
  // (the input only when that micro-batch is recomputed).
  Tensor forward(int micro_batch, Tensor input, const nn::LayerContext& ctx);
  // Backward of `micro_batch`: recomputes its forward first if only the input was stored; under
  // per-layer recompute, walks the layers from last to first, re-running one layer's forward from
  // its kept input just before that layer's backward (and dropping the input after). Takes over
  // grad_output (no copy) and frees it after the last layer's backward. Returns d loss
  // / d input (empty on the stage that holds layer 0). Frees the stash.
  Tensor backward(int micro_batch, Tensor grad_output, const nn::LayerContext& ctx);
  // The backward split in two (zero-bubble schedules): backward_input is backward (returns the
  // same input gradient, frees the stash) except that each layer that splits its backward
  // (nn::Layer::splits_backward) leaves its parameter gradients to backward_weight, which the
  // stage keeps that layer's output gradient and saved tensors for (counted in stored_bytes);
  // backward_weight of the same micro-batch adds them, last layer first, calling the layer hook
  // (backward) after every layer, and frees what was kept. Layers that do not split do all their
  // work in backward_input. Call backward_weight in ascending micro-batch order.
  Tensor backward_input(int micro_batch, Tensor grad_output, const nn::LayerContext& ctx);
  void backward_weight(int micro_batch, const nn::LayerContext& ctx);
  // Completes the gradients the step's backwards deferred (Layer::finish_step_grads), last layer
  // first, calling the layer hook (backward) after each; once per training step, after the last
  // backward. `ctx` is that backward's.
  void finish_step_grads(const nn::LayerContext& ctx);
  // Whether backwards defer gradients to finish_step_grads (batched weight gradients of more
  // than one micro-batch): a layer's gradient is then complete only after it.
  bool defers_grads() const {
    return weight_grads_ == WeightGrads::kBatched && num_micro_batches_ > 1;
  }
  // Forward in evaluation mode; stores nothing.
  Tensor evaluate(const Tensor& input, const nn::LayerContext& ctx);

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
  struct Stash {
    Tensor input;                      // kept when the forward is recomputed
    std::vector<nn::Saved> saved;      // one per layer, kept when it is not
    std::vector<Tensor> layer_inputs;  // one per layer under per-layer recompute
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
  Tensor backward_layers(Stash& stash, Tensor grad_output, const nn::LayerContext& ctx,
                         int micro_batch, WeightWork* work);
  // Backward of a per-layer stash: one layer's recompute and backward at a time.
  Tensor backward_per_layer(Stash& stash, Tensor grad_output, const nn::LayerContext& ctx,
                            int micro_batch, WeightWork* work);
  // Runs `contribute`, which adds layer i's parameter gradients of `micro_batch`: under
  // weight_grads: tree, inside the gradient tree's open and close.
  template <typename Contribute>
  void add_layer_grads(size_t i, int micro_batch, Contribute contribute);
  // Layer i's backward (whole, or its input part into `work`); returns its input gradient.
  Tensor layer_backward(size_t i, Tensor grad, nn::Saved& saved, const nn::LayerContext& ctx,
                        int micro_batch, WeightWork* work);
  // The context of layer `layer`'s backward of `micro_batch`.
  nn::LayerContext backward_context(const nn::LayerContext& ctx, size_t layer,
                                    int micro_batch) const;
  // Runs all layers; appends each layer's Saved to `saved` and its buffer update to `update`
  // unless they are null.
  Tensor run_forward(const Tensor& input, const nn::LayerContext& ctx,
                     std::vector<nn::Saved>* saved, std::vector<float>* update = nullptr);
  // Runs all layers, moving each layer's input into `inputs` (no copies); returns the output.
  Tensor forward_per_layer(Tensor input, const nn::LayerContext& ctx, std::vector<Tensor>& inputs,
                           std::vector<float>& update);

  std::vector<std::unique_ptr<nn::Layer>> layers_;
  std::unique_ptr<nn::ParamBuffer> params_;
  Recompute recompute_;
  int num_micro_batches_;
  WeightGrads weight_grads_;
  bool grads_unset_ = false;  // zero_grads_for_step() left the overwriting layers' grads alone
  std::optional<GradientTree> gradient_tree_;  // weight_grads: tree
  std::map<int, Stash> stash_;
  std::map<int, WeightWork> weight_work_;             // per micro-batch, from its I to its W
  std::map<int, std::vector<float>> buffer_updates_;  // per micro-batch, until taken
  size_t stored_bytes_ = 0;
  size_t peak_stored_bytes_ = 0;
  LayerHook layer_hook_;
  LayerTimes* layer_times_ = nullptr;
};

}  // namespace mpipe::pipeline
