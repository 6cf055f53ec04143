// Layer: the interface every pipeline-placeable layer implements. Layers hold parameters (views
// into their stage's buffer); forward returns what backward needs, which the stage keeps per
// micro-batch (except a linear layer with batched or grouped weight gradients: it keeps the step's
// or the group's inputs).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "kernels/context.h"
#include "nn/layer_needs.h"

namespace mpipe::nn {

// How a parameter or buffer is initialized. Draws come from the counter RNG keyed by
// (seed, global layer index, parameter index), so the values never depend on the partition.
enum class Init {
  kZeros,
  kOnes,
  kKaimingUniform,  // U(-b, b), b = sqrt(6 / fan_in): for layers followed by ReLU
  kXavierUniform,   // U(-b, b), b = sqrt(6 / (fan_in + fan_out))
  kNormal,          // N(0, std^2)
};

struct ParamSpec {
  std::string name;  // "weight", "bias", ...; exported as layers.<global index>.<name>
  Shape shape;
  Init init = Init::kZeros;
  int64_t fan_in = 0;
  int64_t fan_out = 0;
  float std = 0.02f;  // for kNormal
};

// Everything a forward or backward call needs besides the tensors.
struct LayerContext {
  kernels::KernelContext& kernels;
  uint64_t seed = 0;
  int64_t step = 0;           // optimizer step (0-based)
  int64_t first_example = 0;  // index in the global mini-batch of this micro-batch's first example
  bool training = true;
  bool recompute = false;       // a re-materialization: records no buffer update (see Layer)
  bool need_input_grad = true;  // false for the model's first layer: backward may skip dx
  // Backward only: which of the step's equal-sized micro-batches this is, and whether a layer
  // with weights defers its weight gradient to one GEMM over its group of micro-batches
  // (pipeline weight_grads: batched or grouped, plan/weight_groups.h), run by
  // Layer::finish_step_grads.
  int micro_batch = 0;
  int micro_batches = 1;
  bool batch_weight_grads = false;
  // With batch_weight_grads: the first micro-batch of micro_batch's group and the group's
  // micro-batches; a size of 0 is one group of the whole step (weight_grads: batched).
  int weight_group_first = 0;
  int weight_group_size = 0;
  // Backward only, for a layer that writes_grads_first(): its parameter gradients were not zeroed
  // for this step, so its first write of them (micro-batch 0's backward, or the batched weight
  // gradient) overwrites them instead of adding.
  bool grads_unset = false;
};

// What a forward pass keeps for the backward pass of the same micro-batch.
struct Saved {
  std::vector<Tensor> tensors;
  size_t bytes() const {
    size_t n = 0;
    for (const Tensor& t : tensors) n += t.bytes();
    return n;
  }
};

struct Forward {
  Tensor output;
  Saved saved;
  // What this forward changes in the layer's buffers, for the caller to apply later with
  // Layer::apply_buffer_update: buffer_update_size() floats from a first training forward, else
  // empty.
  std::vector<float> buffer_update = {};
};

class Layer {
 public:
  explicit Layer(int global_index) : global_index_(global_index) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  int global_index() const { return global_index_; }
  virtual std::string_view kind() const = 0;
  // Shape of one example's output. Constructors take one example's input shape and throw
  // InputError (without file or line; the model builder adds those) when it does not fit.
  virtual Shape output_shape() const = 0;

  // Trainable parameters and non-trainable buffers (e.g. batch-norm running statistics),
  // in the order bind() receives their views.
  virtual std::vector<ParamSpec> param_specs() const { return {}; }
  virtual std::vector<ParamSpec> buffer_specs() const { return {}; }
  // Called once, before any forward: views into the stage's contiguous buffers.
  virtual void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                    std::vector<std::span<float>> buffers) {
    (void)params, (void)grads, (void)buffers;
  }

  // x: [batch, ...input shape]. Returns the output and what backward needs.
  virtual Forward forward(const Tensor& x, const LayerContext& ctx) = 0;
  // The same for a caller that has no further use for x: a layer that saves its input keeps x
  // itself instead of a copy (the stage's forward passes each layer's output on this way).
  virtual Forward forward_consuming(Tensor x, const LayerContext& ctx) { return forward(x, ctx); }
  // Extra inputs (a model graph's `read`: docs/design/graph.md, "Networks that are not a chain"). A
  // kind that reads takes the read values' shapes in its constructor and overrides these three;
  // a stage calls forward_reading and backward_reading, never forward and backward, for a layer
  // with num_reads() > 0, and never these two for the others.
  virtual int num_reads() const { return 0; }
  // x: the main input; reads: num_reads() tensors [batch, ...], in the order the layer lists them.
  virtual Forward forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                                  const LayerContext& ctx);
  // dy → the gradients of x (empty when !ctx.need_input_grad) and of each read, in that order.
  virtual std::vector<Tensor> backward_reading(const Tensor& dy, const Saved& saved,
                                               const LayerContext& ctx);

  // dy: [batch, ...output shape] → dx: [batch, ...input shape] (empty when
  // !ctx.need_input_grad). Adds this micro-batch's parameter gradients into the grad views (or
  // writes them: LayerContext::grads_unset; or defers them to finish_step_grads).
  virtual Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) = 0;
  // The backward split in two for zero-bubble schedules (pipeline schedule zb_h1): the stage
  // calls backward_input for micro-batch m (its I op) and, later, backward_weight (its W op) with
  // the same dy and saved tensors, which it keeps in between; W ops run in ascending micro-batch
  // order, so the parameter gradients are added with the same float operations in the same order
  // as by backward. A layer that splits returns true from splits_backward and overrides both; for
  // the others backward_input is the whole backward and backward_weight does nothing.
  virtual bool splits_backward() const { return false; }
  // dx as backward returns it; a layer that splits adds no parameter gradient here. It may
  // replace `saved` by what its backward_weight needs (its output gradient aside, which the
  // stage keeps): drop what only dx needed, add what dx computed on the way (attention's q/k/v
  // gradient, a composite's inner output gradients), as LayerNeeds::weight_work_tensor_bytes says.
  virtual Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
    return backward(dy, saved, ctx);
  }
  // The parameter gradients backward would add (or write, or defer) for this dy, from the Saved
  // that backward_input left.
  virtual void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
    (void)dy, (void)saved, (void)ctx;
  }
  // Completes what the backwards of a group of micro-batches deferred (batched or grouped weight
  // gradients: one GEMM over the group's operands, added after the earlier groups'). Called once
  // per group, after its last backward (and after that one's input gradient went on its way:
  // deferred work is off the pipeline's critical path), with the context of a backward of that
  // group.
  virtual void finish_step_grads(const LayerContext& ctx) { (void)ctx; }
  // Whether backward honours LayerContext::grads_unset (every parameter gradient written in full
  // by the step's first write), so that a stage need not zero its gradients before the step.
  virtual bool writes_grads_first() const { return false; }

  // Deferred buffer updates. A forward never changes the layer's buffers (batch-norm running
  // statistics) itself: a first training forward (ctx.training && !ctx.recompute) returns the
  // change in Forward::buffer_update, and whoever runs the layer applies it. A pipeline stage
  // records one per micro-batch; after the step every data-parallel replica applies all
  // replicas' updates in global micro-batch order, so the buffers do not depend on D.
  // Floats in one update (0: this layer never updates its buffers).
  virtual int64_t buffer_update_size() const { return 0; }
  // Applies an update returned by a forward of this layer (on this replica or another one).
  virtual void apply_buffer_update(std::span<const float> update) { (void)update; }

  // Forward floating-point operations for one example (for the cost model and benchmarks).
  virtual double forward_flops_per_example() const { return 0.0; }
  // What a training forward keeps and what the layer's forward and backward allocate and cost
  // besides (the cost model's memory and backward FLOPs), stated by each layer beside its code.
  virtual LayerNeeds needs() const = 0;

 private:
  int global_index_;
};

}  // namespace mpipe::nn
