// Linear layer: shape checks, parameter specs and the oneDNN linear kernels.
#include "nn/linear.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "kernels/matmul.h"

namespace mpipe::nn {

Linear::Linear(int global_index, const Shape& input_shape, int64_t units, bool bias, Init init)
    : InputSavingLayer(global_index),
      input_shape_(input_shape),
      in_(0),
      units_(units),
      has_bias_(bias),
      init_(init) {
  check_input(input_shape.rank() >= 1, "linear needs an input with at least one axis, got {}",
              input_shape);
  in_ = input_shape[input_shape.rank() - 1];
  check_input(in_ > 0, "linear needs a non-empty last input axis, got {}", input_shape);
  check_input(units > 0, "linear units must be >= 1, got {}", units);
  output_shape_ = input_shape;
  output_shape_[output_shape_.rank() - 1] = units;
}

std::vector<ParamSpec> Linear::param_specs() const {
  std::vector<ParamSpec> specs = {
      {.name = "weight", .shape = {units_, in_}, .init = init_, .fan_in = in_, .fan_out = units_}};
  if (has_bias_) {
    specs.push_back({.name = "bias",
                     .shape = {units_},
                     .init = Init::kZeros,
                     .fan_in = in_,
                     .fan_out = units_});
  }
  return specs;
}

void Linear::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                  std::vector<std::span<float>> buffers) {
  const size_t expected = has_bias_ ? 2 : 1;
  check(params.size() == expected && grads.size() == expected && buffers.empty(),
        "Linear::bind: expected {} params", expected);
  weight_ = params[0];
  weight_grad_ = grads[0];
  if (has_bias_) {
    bias_ = params[1];
    bias_grad_ = grads[1];
  }
}

Forward Linear::forward_without_input(const Tensor& x, const LayerContext& ctx) const {
  check(x.shape().rank() >= 1 && x.shape().per_example() == input_shape_,
        "Linear: input {} does not match the layer's input shape {}", x.shape(), input_shape_);
  check(!weight_.empty(), "Linear: forward before bind");
  const int64_t rows = x.numel() / in_;
  Shape out_shape = x.shape();
  out_shape[out_shape.rank() - 1] = units_;
  Tensor y = Tensor::uninitialized(out_shape);
  // x: [rows, in], weight: [units, in], bias: [units] → y: [rows, units]
  kernels::linear_forward(ctx.kernels, x.data(), weight_.data(), has_bias_ ? bias_.data() : nullptr,
                          y.data(), rows, in_, units_);
  return {.output = std::move(y), .saved = {}};
}

const Tensor& Linear::saved_input(const Tensor& dy, const Saved& saved, int64_t& rows) const {
  check(saved.tensors.size() == 1, "Linear::backward: nothing saved (forward not in training?)");
  const Tensor& x = saved.tensors[0];
  rows = x.numel() / in_;
  check(dy.numel() == rows * units_, "Linear::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  return x;
}

Tensor Linear::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  int64_t rows = 0;
  const Tensor& x = saved_input(dy, saved, rows);
  if (!ctx.need_input_grad) return {};
  // dx[rows, in] = dy[rows, units] · W[units, in]
  Tensor dx = Tensor::uninitialized(x.shape());
  kernels::linear_backward_data(ctx.kernels, dy.data(), weight_.data(), dx.data(), rows, in_,
                                units_);
  return dx;
}

void Linear::backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  int64_t rows = 0;
  const Tensor& x = saved_input(dy, saved, rows);
  if (ctx.batch_weight_grads) {
    defer_weight_grad(x, dy, rows, ctx);
    return;
  }
  // What linear_backward adds before dx: dW[units, in] += dy^T · x, db[units] += column sums
  // of dy (= on the step's first write).
  const bool accumulate = !(ctx.grads_unset && ctx.micro_batch == 0);
  kernels::linear_backward_weights(ctx.kernels, x.data(), dy.data(), weight_grad_.data(),
                                   has_bias_ ? bias_grad_.data() : nullptr, rows, in_, units_,
                                   accumulate);
}

Tensor Linear::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  int64_t rows = 0;
  const Tensor& x = saved_input(dy, saved, rows);
  Tensor dx;
  if (ctx.need_input_grad) dx = Tensor::uninitialized(x.shape());
  if (ctx.batch_weight_grads) {
    defer_weight_grad(x, dy, rows, ctx);
    // dx[rows, in] = dy[rows, units] · W[units, in]
    if (!dx.empty()) {
      kernels::linear_backward_data(ctx.kernels, dy.data(), weight_.data(), dx.data(), rows, in_,
                                    units_);
    }
    return dx;
  }
  // dW[units, in] += dy^T · x, db[units] += column sums of dy (= on the step's first write), and
  // dx = dy · W.
  const bool accumulate = !(ctx.grads_unset && ctx.micro_batch == 0);
  kernels::linear_backward(ctx.kernels, x.data(), dy.data(), weight_.data(),
                           dx.empty() ? nullptr : dx.data(), weight_grad_.data(),
                           has_bias_ ? bias_grad_.data() : nullptr, rows, in_, units_, accumulate);
  return dx;
}

namespace {

// The first micro-batch and the micro-batches of ctx.micro_batch's weight-gradient group.
std::pair<int, int> weight_group_of(const LayerContext& ctx) {
  if (ctx.weight_group_size == 0) return {0, ctx.micro_batches};  // the whole step
  return {ctx.weight_group_first, ctx.weight_group_size};
}

}  // namespace

void Linear::defer_weight_grad(const Tensor& x, const Tensor& dy, int64_t rows,
                               const LayerContext& ctx) {
  const auto [first, size] = weight_group_of(ctx);
  check(0 <= ctx.micro_batch && ctx.micro_batch < ctx.micro_batches && first <= ctx.micro_batch &&
            ctx.micro_batch < first + size,
        "Linear: micro-batch {} of {}, of the group of {} from {}", ctx.micro_batch,
        ctx.micro_batches, size, first);
  if (operands_.filled > 0 && operands_.step != ctx.step) {
    operands_ = {};  // a step that ended early (its gradients are discarded with it)
  }
  const int64_t all_rows = rows * size;
  if (operands_.filled == 0) {
    operands_.x = Tensor::uninitialized(Shape{all_rows, in_});
    operands_.dy = Tensor::uninitialized(Shape{all_rows, units_});
    operands_.step = ctx.step;
    operands_.first = first;
  }
  check(operands_.first == first,
        "Linear: micro-batch {} of the group from {} before the product of the group from {}",
        ctx.micro_batch, first, operands_.first);
  check(operands_.x.numel() == all_rows * in_,
        "Linear: micro-batch {} has {} rows, an earlier one of its group {}", ctx.micro_batch, rows,
        operands_.x.numel() / (in_ * size));
  const int64_t begin = (ctx.micro_batch - first) * rows;
  std::copy_n(x.data(), rows * in_, operands_.x.data() + begin * in_);
  std::copy_n(dy.data(), rows * units_, operands_.dy.data() + begin * units_);
  ++operands_.filled;
}

void Linear::finish_step_grads(const LayerContext& ctx) {
  if (operands_.filled == 0) return;  // nothing deferred (accumulated, or one micro-batch)
  const auto [first, size] = weight_group_of(ctx);
  check(operands_.step == ctx.step && operands_.first == first && operands_.filled == size,
        "Linear: finishing the group of {} from micro-batch {} of step {} with {} micro-batches' "
        "operands of the group from {} of step {}",
        size, first, ctx.step, operands_.filled, operands_.first, operands_.step);
  // dW[units, in] += dy^T · x and db[units] += column sums of dy over every row of the group (=
  // for the step's first group when the gradients were not zeroed).
  kernels::linear_backward_weights(ctx.kernels, operands_.x.data(), operands_.dy.data(),
                                   weight_grad_.data(), has_bias_ ? bias_grad_.data() : nullptr,
                                   operands_.x.numel() / in_, in_, units_,
                                   !(ctx.grads_unset && first == 0));
  operands_ = {};
}

double Linear::forward_flops_per_example() const {
  const double rows = static_cast<double>(input_shape_.numel() / in_);
  return rows * (2.0 * static_cast<double>(in_) * static_cast<double>(units_) +
                 (has_bias_ ? static_cast<double>(units_) : 0.0));
}

LayerNeeds Linear::needs() const {
  // Keeps x (forward_consuming: the tensor handed in); batched weight gradients copy x and dy.
  const double input_bytes = float_bytes(input_shape_.numel());
  const double output_bytes = float_bytes(output_shape_.numel());
  return {
      .kept_tensor_bytes = {input_bytes},
      .smallest_temporary_bytes = smaller_activation_bytes(input_shape_, output_shape_),
      .keeps_consumed_input = true,
      .weight_grad_operand_bytes = input_bytes + output_bytes,
      .backward_flops = matrix_product_backward_flops(forward_flops_per_example(), global_index()),
      .splits_backward = true,
      .weight_grad_flops = 2.0 * static_cast<double>(input_shape_.numel() / in_) *
                           static_cast<double>(in_) * static_cast<double>(units_),
      .weight_work_tensor_bytes = {input_bytes},
      // Beyond its products (their rates measured on warm operands), the forward reads x and
      // writes y into a block malloc hands out, the backward reads dy and writes dx so (none as
      // the model's first layer) and its bias gradient's column sums read dy again: 0.02-0.04 ms
      // beyond a 32-row product of 1024 x 1024 (apps/bench/bench_layer_ops), about these bytes
      // at an activation's rate. x is kept as handed in. (Deferred weight gradients' copies of x
      // and dy are the planner's: plan::LayerCost::weight_grad_operand_bytes.)
      .forward_traffic_bytes = input_bytes + output_bytes,
      .backward_traffic_bytes = output_bytes + (global_index() == 0 ? 0.0 : input_bytes) +
                                (has_bias_ ? output_bytes : 0.0)};
}

}  // namespace mpipe::nn
