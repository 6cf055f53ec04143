// SeparableCell layer: depthwise and pointwise Conv2d and BatchNorm2d sub-layers, the ReLU
// through the eltwise kernel and the residual sum.
#include "nn/separable_cell.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/eltwise.h"
#include "nn/composite.h"

namespace mpipe::nn {
namespace {

// The input shape and kernel, checked before any sub-layer sees them.
const Shape& checked_input(const Shape& input_shape, int64_t kernel) {
  check_input(input_shape.rank() == 3 && input_shape.numel() > 0,
              "separable_cell needs an input [channels, height, width], got {}", input_shape);
  check_input(kernel >= 1 && kernel % 2 == 1, "separable_cell: kernel must be odd, got {}", kernel);
  return input_shape;
}

Tensor relu(kernels::KernelContext& ctx, const Tensor& x) {
  Tensor y(x.shape());
  kernels::eltwise_forward(ctx, kernels::EltwiseKind::kRelu, x.data(), y.data(), x.numel());
  return y;
}

// y += x, element-wise; both of the same shape.
void add_into(Tensor& y, const Tensor& x) {
  float* out = y.data();
  const float* in = x.data();
  for (int64_t i = 0; i < y.numel(); ++i) out[i] += in[i];
}

}  // namespace

SeparableCell::SeparableCell(int global_index, const Shape& input_shape, int64_t out_channels,
                             int64_t kernel, int64_t stride)
    : Layer(global_index),
      depthwise_(global_index, checked_input(input_shape, kernel), input_shape[0], kernel, stride,
                 /*padding=*/kernel / 2, /*dilation=*/1, /*groups=*/input_shape[0],
                 /*bias=*/false),
      pointwise_(global_index, depthwise_.output_shape(), out_channels, 1, 1, 0, 1, 1,
                 /*bias=*/false),
      bn_(global_index, pointwise_.output_shape()),
      residual_(bn_.output_shape() == input_shape) {}

std::vector<ParamSpec> SeparableCell::param_specs() const {
  std::vector<ParamSpec> specs;
  append_prefixed(specs, depthwise_.param_specs(), "depthwise.");
  append_prefixed(specs, pointwise_.param_specs(), "pointwise.");
  append_prefixed(specs, bn_.param_specs(), "bn.");
  return specs;
}

std::vector<ParamSpec> SeparableCell::buffer_specs() const {
  std::vector<ParamSpec> specs;
  append_prefixed(specs, bn_.buffer_specs(), "bn.");
  return specs;
}

void SeparableCell::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                         std::vector<std::span<float>> buffers) {
  check(params.size() == 4 && grads.size() == 4 && buffers.size() == 2,
        "SeparableCell::bind: expected 4 params and 2 buffers");
  depthwise_.bind({params[0]}, {grads[0]}, {});
  pointwise_.bind({params[1]}, {grads[1]}, {});
  bn_.bind({params[2], params[3]}, {grads[2], grads[3]}, std::move(buffers));
}

Forward SeparableCell::forward(const Tensor& x, const LayerContext& ctx) {
  Tensor depthwise = depthwise_.apply(relu(ctx.kernels, x), ctx);
  Forward normed = bn_.forward_consuming(pointwise_.apply(depthwise, ctx), ctx);
  if (residual_) add_into(normed.output, x);
  Forward result{.output = std::move(normed.output),
                 .saved = {},
                 .buffer_update = std::move(normed.buffer_update)};
  if (ctx.training) {
    result.saved.tensors.reserve(kSavedTensors);
    result.saved.tensors.push_back(x);
    result.saved.tensors.push_back(std::move(depthwise));
    for (Tensor& t : normed.saved.tensors) result.saved.tensors.push_back(std::move(t));
  }
  return result;
}

Tensor SeparableCell::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == kSavedTensors,
        "SeparableCell::backward: nothing saved (forward not in training?)");
  const std::span<const Tensor> all(saved.tensors);
  const Tensor& x = all[0];
  LayerContext inner = ctx;
  inner.need_input_grad = true;
  const Tensor dpointwise = bn_.backward_from(dy, all.subspan(2), inner);
  const Tensor ddepthwise = pointwise_.backward_from(dpointwise, all.subspan(1, 1), inner);
  const Tensor activated = relu(ctx.kernels, x);
  Tensor dx = depthwise_.backward_from(ddepthwise, std::span<const Tensor>(&activated, 1), ctx);
  if (!ctx.need_input_grad) return {};
  kernels::eltwise_backward(ctx.kernels, kernels::EltwiseKind::kRelu, x.data(), dx.data(),
                            dx.data(), dx.numel());
  if (residual_) add_into(dx, dy);
  return dx;
}

Tensor SeparableCell::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == kSavedTensors,
        "SeparableCell::backward: nothing saved (forward not in training?)");
  std::vector<Tensor>& all = saved.tensors;
  LayerContext inner = ctx;
  inner.need_input_grad = true;
  // As in backward, without the parameter gradients; the batch norm's saved tensors are freed
  // once it has run.
  std::vector<Tensor> parts;
  Tensor dpointwise = bn_.backward_input_from(dy, std::span(all).subspan(2), inner, parts);
  all.resize(2);
  Tensor ddepthwise = pointwise_.backward_data(dpointwise, inner);
  Tensor dx = depthwise_.backward_data(ddepthwise, ctx);
  Tensor& x = all[0];
  if (ctx.need_input_grad) {
    kernels::eltwise_backward(ctx.kernels, kernels::EltwiseKind::kRelu, x.data(), dx.data(),
                              dx.data(), dx.numel());
    if (residual_) add_into(dx, dy);
  }
  // x is used up: the depthwise conv's input, ReLU(x), takes its place (backward recomputes it).
  kernels::eltwise_forward(ctx.kernels, kernels::EltwiseKind::kRelu, x.data(), x.data(), x.numel());
  // What backward_weight reads, in this order.
  all.push_back(std::move(dpointwise));
  all.push_back(std::move(ddepthwise));
  for (Tensor& t : parts) all.push_back(std::move(t));
  return dx;
}

void SeparableCell::backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)dy;
  check(saved.tensors.size() == kWeightKeptTensors, "SeparableCell::backward_weight: nothing kept");
  const std::span<const Tensor> all(saved.tensors);
  // What backward adds: the batch norm's parts, the pointwise conv's dweight from the depthwise
  // output and its output gradient, the depthwise conv's from ReLU(x) and its own.
  bn_.backward_weight_from(all.last(BatchNorm2d::kWeightKeptTensors));
  pointwise_.backward_weight_from(all[2], all.subspan(1, 1), ctx);
  depthwise_.backward_weight_from(all[3], all.subspan(0, 1), ctx);
}

double SeparableCell::forward_flops_per_example() const {
  // Sub-layers, then about one operation per element for the ReLU and the residual sum.
  const auto elements = static_cast<double>(output_shape().numel());
  return depthwise_.forward_flops_per_example() + pointwise_.forward_flops_per_example() +
         bn_.forward_flops_per_example() + elements * (residual_ ? 2.0 : 1.0);
}

LayerNeeds SeparableCell::needs() const {
  // Keeps x, the depthwise output and the batch norm's tensors; its backward holds about as much
  // again (the gradients of those internals).
  const double x = float_bytes(depthwise_.input_shape().numel());
  const double depthwise_output = float_bytes(depthwise_.output_shape().numel());
  const double y = float_bytes(output_shape().numel());
  LayerNeeds needs{.kept_tensor_bytes = {x, depthwise_output}};
  needs.keep_all_of(bn_.needs());
  needs.backward_temporary_bytes = needs.kept_bytes_per_example();
  needs.smallest_temporary_bytes =
      smaller_activation_bytes(depthwise_.input_shape(), output_shape());
  needs.backward_fixed_tensor_bytes = bn_.needs().backward_fixed_tensor_bytes;
  // Evaluation, beyond x and the output (nothing saved): ReLU(x) beside the depthwise output, then
  // that output (held to the end) beside the pointwise output and its batch norm's.
  needs.evaluation_temporary_bytes = std::max(x + depthwise_output - y, depthwise_output + y);
  needs.backward_flops = matrix_product_backward_flops(forward_flops_per_example(), global_index());
  // Split (backward_input's order): ReLU(x), the depthwise output, the pointwise and depthwise
  // output gradients, the batch norm's parts. W runs both convs' weight products.
  needs.splits_backward = true;
  needs.keep_weight_work_of(depthwise_.needs());
  needs.keep_weight_work_of(pointwise_.needs());
  needs.weight_work_tensor_bytes.push_back(y);
  needs.weight_work_tensor_bytes.push_back(depthwise_output);
  needs.keep_weight_work_of(bn_.needs());
  // I, beyond what forward saved and dy: the pointwise output gradient (kept) beside the batch
  // norm's saved input, then (that freed) the depthwise output gradient (kept) and dx.
  needs.backward_input_temporary_bytes = std::max(y - x, depthwise_output);
  return needs;
}

}  // namespace mpipe::nn
