// Cost model: what one layer costs in compute and memory, assembled from the model plan (shapes,
// parameter specs and what each built layer states it needs: nn::LayerNeeds), without running it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model_builder.h"
#include "plan/allocator_model.h"

namespace mpipe::plan {

// One layer's costs. Per-example figures scale with the rows of a micro-batch; bytes are f32.
struct LayerCost {
  int index = 0;
  std::string kind;
  double forward_flops = 0.0;   // per example
  double backward_flops = 0.0;  // per example: input and parameter gradients (see cost_of)
  int64_t num_params = 0;
  double param_bytes = 0.0;   // trainable values, laid out as ParamBuffer does (64-byte aligned)
  double buffer_bytes = 0.0;  // non-trainable buffers (batch-norm running statistics)
  double input_bytes = 0.0;   // per example: the activation it receives
  double output_bytes = 0.0;  // per example: the activation it hands on (a stage boundary)
  double saved_bytes = 0.0;   // per example: what forward keeps for backward (nn::Saved)
  double saved_fixed_bytes = 0.0;   // per micro-batch, whatever its rows (batch-norm statistics)
  double saved_packed_bytes = 0.0;  // per example, packed into floats per micro-batch (max-pool
                                    // positions: oneDNN's workspace, 1 or 4 bytes per output)
  // The same tensor by tensor (saved_bytes and saved_fixed_bytes are their sums; the packed
  // bytes are one tensor): the allocator rounds each block.
  std::vector<double> saved_tensor_bytes = {};
  std::vector<double> saved_fixed_tensor_bytes = {};
  // Per example: temporaries inside a backward beyond its input, output and their gradients (a
  // composite layer's internal gradients; none for a single-kernel layer), and inside a training
  // forward beyond its input, output and what it saves (attention's dropout mask of the
  // probabilities, the Transformer block's of its MLP output; none for the other layers).
  double workspace_bytes = 0.0;
  double forward_workspace_bytes = 0.0;
  // Per example: temporaries inside an evaluation forward beyond its input and output (a
  // composite layer's inner outputs, which a training forward saves instead).
  double evaluation_workspace_bytes = 0.0;
  // Per example: no tensor among those temporaries is smaller (for the allocator's rounding).
  double smallest_temporary_bytes = 0.0;
  // Per micro-batch, whatever its rows: a backward's small tensors (batch norm's per-channel
  // partial sums), each a block of the allocator.
  std::vector<double> workspace_fixed_tensor_bytes = {};
  // Whether a forward handed its input (Layer::forward_consuming: every layer of a stage but the
  // first) keeps that tensor among what it saves instead of a copy.
  bool keeps_consumed_input = false;
  // Whether backward allocates an input gradient (not for token ids: the embedding).
  bool has_input_gradient = true;
  // Per example: what batched or grouped weight gradients (pipeline weight_grads) hold from a
  // step's (a group's) first backward to its GEMM: a copy of the input and of the output gradient
  // (linear).
  double weight_grad_operand_bytes = 0.0;
  // Whether the layer splits its backward (zero-bubble schedules: nn::Layer::splits_backward).
  bool splits_backward = false;
  // Per example, for a layer that splits its backward (0 for the others): the FLOPs of its
  // weight gradient, part of backward_flops.
  double weight_grad_flops = 0.0;
  // What such a layer keeps from its I op to its W op besides its output gradient, tensor by
  // tensor: per example, and per micro-batch whatever its rows (nn::LayerNeeds).
  std::vector<double> weight_work_tensor_bytes = {};
  std::vector<double> weight_work_fixed_tensor_bytes = {};
  // workspace_bytes and workspace_fixed_tensor_bytes for such a layer's I op (backward_input),
  // which may hold other temporaries (nn::LayerNeeds::backward_input_temporary_bytes).
  double input_workspace_bytes = 0.0;
  std::vector<double> input_workspace_fixed_tensor_bytes = {};
  // The model's last layer: what the loss holds beside its output while it computes its gradient,
  // tensor by tensor, per example (ModelPlan::loss_tensor_bytes); empty for the other layers.
  std::vector<double> loss_tensor_bytes = {};
  // Per example: the bytes a forward and a backward read and write outside the layer's matrix
  // products, where the layer states them (nn::LayerNeeds::forward_traffic_bytes; unset: the
  // defaults of forward_traffic_bytes() and backward_traffic_bytes()).
  std::optional<double> stated_forward_traffic_bytes = {};
  std::optional<double> stated_backward_traffic_bytes = {};

  // Bytes forward keeps for backward for a micro-batch of `rows` examples: exactly what
  // nn::Saved::bytes() reports for this layer's training forward.
  double kept_bytes(int64_t rows) const;
  // Bytes a training forward of `rows` examples holds beyond what it saves: its input (unless
  // `consumed` and kept among what it saves), its output and its internals.
  double forward_bytes(int64_t rows, bool consumed) const;
  // Bytes a backward of `rows` examples holds beyond what its forward saved: its output
  // gradient, its input gradient and its internals.
  double backward_bytes(int64_t rows) const;
  // The same three in what the memory account counts: each tensor's block as `allocator` rounds
  // it (the temporaries, known in sum, as blocks of at least smallest_temporary_bytes).
  double kept_block_bytes(int64_t rows, const AllocatorModel& allocator) const;
  double forward_block_bytes(int64_t rows, bool consumed, const AllocatorModel& allocator) const;
  double backward_block_bytes(int64_t rows, const AllocatorModel& allocator) const;
  // The blocks an evaluation forward of `rows` examples holds: its input (held to its end, as no
  // layer keeps it), its output and its internals.
  double evaluation_block_bytes(int64_t rows, const AllocatorModel& allocator) const;
  // backward_block_bytes for the I op of a layer that splits its backward (its backward's for
  // the others).
  double backward_input_block_bytes(int64_t rows, const AllocatorModel& allocator) const;
  // Either of the two with temporaries of `workspace` bytes per example and `fixed` per
  // micro-batch.
  double gradient_block_bytes(int64_t rows, double workspace, const std::vector<double>& fixed,
                              const AllocatorModel& allocator) const;
  // The blocks of what a layer that splits its backward keeps from its I op to its W op, its
  // output gradient among them (0 for the other layers).
  double weight_work_block_bytes(int64_t rows, const AllocatorModel& allocator) const;
  // Bytes a forward or backward reads and writes outside its matrix products, per example: the
  // memory-traffic part of the time model. As stated, else a forward's input, output and what it
  // saves, a backward's saved tensors, output gradient and input gradient.
  double forward_traffic_bytes() const;
  double backward_traffic_bytes() const;
};

// The cost of one planned layer, from its plan and what the layer reported (LayerPlan::needs).
LayerCost cost_of(const model::LayerPlan& plan);

// Every layer's cost, in model order (the last one with the loss's tensors).
std::vector<LayerCost> layer_costs(const model::ModelPlan& plan);

}  // namespace mpipe::plan
