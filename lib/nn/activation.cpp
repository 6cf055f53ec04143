// Activation layer on the oneDNN eltwise kernels; backward uses the saved input.
#include "nn/activation.h"

#include "core/error.h"

namespace mpipe::nn {

Activation::Activation(int global_index, const Shape& input_shape, kernels::EltwiseKind kind)
    : InputSavingLayer(global_index), input_shape_(input_shape), kind_(kind) {
  check_input(input_shape.numel() > 0, "{} needs a non-empty input, got {}",
              kernels::eltwise_kind_name(kind), input_shape);
}

Forward Activation::forward_without_input(const Tensor& x, const LayerContext& ctx) const {
  check(x.shape().rank() >= 1 && x.shape().per_example() == input_shape_,
        "{}: input {} does not match the layer's input shape {}", kind(), x.shape(), input_shape_);
  Tensor y = Tensor::uninitialized(x.shape());
  kernels::eltwise_forward(ctx.kernels, kind_, x.data(), y.data(), x.numel());
  return {.output = std::move(y), .saved = {}};
}

Tensor Activation::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == 1, "{}::backward: nothing saved (forward not in training?)",
        kind());
  const Tensor& x = saved.tensors[0];
  check(dy.shape() == x.shape(), "{}::backward: dy {} does not match x {}", kind(), dy.shape(),
        x.shape());
  if (!ctx.need_input_grad) return {};
  Tensor dx = Tensor::uninitialized(x.shape());
  kernels::eltwise_backward(ctx.kernels, kind_, x.data(), dy.data(), dx.data(), x.numel());
  return dx;
}

double Activation::forward_flops_per_example() const {
  // Rough per-element costs: a compare for ReLU, a polynomial and an exp for GELU and tanh.
  const double per_element = kind_ == kernels::EltwiseKind::kRelu ? 1.0 : 10.0;
  return per_element * static_cast<double>(input_shape_.numel());
}

LayerNeeds Activation::needs() const {
  // Keeps x; its backward costs about what its forward does. Forward reads x and writes y (x is
  // kept as handed in); backward reads x and dy and writes dx (none for the model's first layer).
  const double bytes = float_bytes(input_shape_.numel());
  return {.kept_tensor_bytes = {bytes},
          .smallest_temporary_bytes = bytes,
          .keeps_consumed_input = true,
          .backward_flops = forward_flops_per_example(),
          .forward_traffic_bytes = 2.0 * bytes,
          .backward_traffic_bytes = global_index() == 0 ? 0.0 : 3.0 * bytes};
}

}  // namespace mpipe::nn
