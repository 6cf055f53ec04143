// LayerNeeds: what a layer's training forward keeps for its backward and what its forward and
// backward allocate besides, as the layer itself states it beside its code (the cost model's
// input, model/cost_model).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/shape.h"

namespace mpipe::nn {

// Bytes are f32 unless said otherwise; "per example" figures scale with a micro-batch's rows.
struct LayerNeeds {
  // What a training forward puts in Saved, tensor by tensor (the allocator rounds each block):
  // bytes per example, bytes per micro-batch whatever its rows (batch-norm statistics), and bytes
  // per example packed into one float tensor per micro-batch (max-pool positions).
  std::vector<double> kept_tensor_bytes = {};
  std::vector<double> kept_fixed_tensor_bytes = {};
  double kept_packed_bytes = 0.0;
  // Per example: temporaries inside a backward beyond its input, output and their gradients (a
  // composite layer's internal gradients), and inside a training forward beyond its input, output
  // and what it keeps.
  double backward_temporary_bytes = 0.0;
  double forward_temporary_bytes = 0.0;
  // Per example: no tensor among those temporaries is smaller (for the allocator's rounding).
  double smallest_temporary_bytes = 0.0;
  // Per micro-batch, whatever its rows: a backward's small tensors (batch norm's per-channel
  // partial sums), each a block of the allocator.
  std::vector<double> backward_fixed_tensor_bytes = {};
  // Whether forward_consuming keeps the input it is handed among what it saves (no copy).
  bool keeps_consumed_input = false;
  // Whether backward allocates an input gradient (not for token ids).
  bool has_input_gradient = true;
  // Per example: what batched or grouped weight gradients (LayerContext::batch_weight_grads) hold
  // from a step's (or a group's) first backward to its GEMM.
  double weight_grad_operand_bytes = 0.0;
  // Per example: backward floating-point operations (input and parameter gradients).
  double backward_flops = 0.0;
  // Whether the layer splits its backward (Layer::splits_backward): zero-bubble schedules then
  // run its backward_input in the I op and its backward_weight in the W op.
  bool splits_backward = false;
  // Per example, for a layer that splits its backward (0 for the others): the floating-point
  // operations of backward_weight, part of backward_flops.
  double weight_grad_flops = 0.0;
  // What such a layer keeps from its I op to its W op besides its output gradient (which the
  // stage keeps): the Saved that backward_input leaves, tensor by tensor, per example and per
  // micro-batch whatever its rows (a norm's parameter-gradient parts).
  std::vector<double> weight_work_tensor_bytes = {};
  std::vector<double> weight_work_fixed_tensor_bytes = {};
  // Per example, for such a layer whose backward_input holds other temporaries than its backward
  // (a composite that frees its saved tensors as it goes and keeps its inner output gradients):
  // those, counted as backward_temporary_bytes is (beyond its input and output gradients, with
  // what forward saved still held); unset: backward_temporary_bytes. The same for its small
  // tensors per micro-batch (a norm's parameter-gradient parts); unset:
  // backward_fixed_tensor_bytes.
  std::optional<double> backward_input_temporary_bytes = {};
  std::optional<std::vector<double>> backward_input_fixed_tensor_bytes = {};
  // Per example: temporaries inside an evaluation forward (LayerContext::training false, nothing
  // saved) beyond its input and output, where they differ from a training forward's (a composite
  // layer's inner outputs, which training saves); unset: forward_temporary_bytes.
  std::optional<double> evaluation_temporary_bytes = {};
  // Per example: the bytes a training forward and a backward read and write outside their matrix
  // products (element-wise kernels, copies, reductions: the memory-traffic part of the time
  // model), for a layer that knows them better than the default: nn::Linear, which keeps the
  // input it is handed and whose products' measured rates cover their arithmetic, and
  // nn::Activation, which keeps its input too. Unset: its input, its output and what it keeps,
  // and backward its saved tensors, its output gradient and its input gradient
  // (plan::LayerCost).
  std::optional<double> forward_traffic_bytes = {};
  std::optional<double> backward_traffic_bytes = {};

  // Appends what `part` keeps (a sub-layer whose saved tensors a composite layer keeps).
  void keep_all_of(const LayerNeeds& part);
  // Appends what a splitting `part` keeps from its I op to its W op and adds its W FLOPs (a
  // sub-layer whose backward a composite layer splits).
  void keep_weight_work_of(const LayerNeeds& part);
  // The sum of kept_tensor_bytes.
  double kept_bytes_per_example() const;
};

// Bytes of `numel` floats.
double float_bytes(int64_t numel);
// The smaller of two activations, in bytes per example: the smallest temporary of a layer whose
// temporaries are activations.
double smaller_activation_bytes(const Shape& input, const Shape& output);
// Backward FLOPs of a layer whose backward runs its forward's matrix products twice (the input
// gradient and the weight gradient), but once for the model's first layer (global index 0), which
// computes no input gradient.
double matrix_product_backward_flops(double forward_flops, int global_index);

}  // namespace mpipe::nn
