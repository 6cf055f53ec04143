// Conv2d layer: shape checks, parameter specs and the oneDNN convolution kernels.
#include "nn/conv2d.h"

#include "core/error.h"

namespace mpipe::nn {

Conv2d::Conv2d(int global_index, const Shape& input_shape, int64_t out_channels, int64_t kernel,
               int64_t stride, int64_t padding, int64_t dilation, int64_t groups, bool bias)
    : InputSavingLayer(global_index),
      input_shape_(input_shape),
      out_channels_(out_channels),
      kernel_(kernel),
      stride_(stride),
      padding_(padding),
      dilation_(dilation),
      groups_(groups),
      has_bias_(bias) {
  check_input(input_shape.rank() == 3 && input_shape.numel() > 0,
              "conv2d needs an input [channels, height, width], got {}", input_shape);
  check_input(out_channels >= 1, "conv2d: channels must be >= 1, got {}", out_channels);
  check_input(kernel >= 1, "conv2d: kernel must be >= 1, got {}", kernel);
  check_input(stride >= 1, "conv2d: stride must be >= 1, got {}", stride);
  check_input(padding >= 0, "conv2d: padding must be >= 0, got {}", padding);
  check_input(dilation >= 1, "conv2d: dilation must be >= 1, got {}", dilation);
  check_input(groups >= 1, "conv2d: groups must be >= 1, got {}", groups);
  check_input(input_shape[0] % groups == 0,
              "conv2d: input has {} channels, not divisible by groups {}", input_shape[0], groups);
  check_input(out_channels % groups == 0, "conv2d: {} output channels, not divisible by groups {}",
              out_channels, groups);
  // SizeError when the kernel's span or the padded input (and so the output) overflows 64 bits.
  const int64_t span =
      checked_add(checked_mul(dilation, kernel - 1, "dilated kernel"), 1, "dilated kernel");
  const int64_t padding_both_sides = checked_mul(2, padding, "padding on both sides");
  const int64_t padded_height =
      checked_add(input_shape[1], padding_both_sides, "input height with padding");
  const int64_t padded_width =
      checked_add(input_shape[2], padding_both_sides, "input width with padding");
  check_input(padded_height >= span && padded_width >= span,
              "conv2d: kernel {} with dilation {} does not fit the input {} with padding {}",
              kernel, dilation, input_shape, padding);
  const kernels::Conv2dShape s = kernel_shape(1);
  output_shape_ = Shape{out_channels, s.out_height(), s.out_width()};
}

kernels::Conv2dShape Conv2d::kernel_shape(int64_t batch) const {
  return {.batch = batch,
          .in_channels = input_shape_[0],
          .height = input_shape_[1],
          .width = input_shape_[2],
          .out_channels = out_channels_,
          .kernel_h = kernel_,
          .kernel_w = kernel_,
          .stride_h = stride_,
          .stride_w = stride_,
          .pad_h = padding_,
          .pad_w = padding_,
          .dilation_h = dilation_,
          .dilation_w = dilation_,
          .groups = groups_};
}

std::vector<ParamSpec> Conv2d::param_specs() const {
  const int64_t fan_in = input_shape_[0] / groups_ * kernel_ * kernel_;
  const int64_t fan_out = out_channels_ / groups_ * kernel_ * kernel_;
  std::vector<ParamSpec> specs = {
      {.name = "weight",
       .shape = {out_channels_, input_shape_[0] / groups_, kernel_, kernel_},
       .init = Init::kKaimingUniform,
       .fan_in = fan_in,
       .fan_out = fan_out}};
  if (has_bias_) {
    specs.push_back({.name = "bias",
                     .shape = {out_channels_},
                     .init = Init::kZeros,
                     .fan_in = fan_in,
                     .fan_out = fan_out});
  }
  return specs;
}

void Conv2d::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                  std::vector<std::span<float>> buffers) {
  const size_t expected = has_bias_ ? 2 : 1;
  check(params.size() == expected && grads.size() == expected && buffers.empty(),
        "Conv2d::bind: expected {} params", expected);
  weight_ = params[0];
  weight_grad_ = grads[0];
  if (has_bias_) {
    bias_ = params[1];
    bias_grad_ = grads[1];
  }
}

Tensor Conv2d::apply(const Tensor& x, const LayerContext& ctx) const {
  check(x.shape().rank() == 4 && x.shape().per_example() == input_shape_,
        "Conv2d: input {} does not match the layer's input shape {}", x.shape(), input_shape_);
  check(!weight_.empty(), "Conv2d: forward before bind");
  const int64_t batch = x.dim(0);
  Tensor y(Shape{batch, output_shape_[0], output_shape_[1], output_shape_[2]});
  // x: [batch, C, H, W], weight: [O, C/groups, k, k], bias: [O] → y: [batch, O, Ho, Wo]
  kernels::conv2d_forward(ctx.kernels, kernel_shape(batch), x.data(), weight_.data(),
                          has_bias_ ? bias_.data() : nullptr, y.data());
  return y;
}

Forward Conv2d::forward_without_input(const Tensor& x, const LayerContext& ctx) const {
  return {.output = apply(x, ctx), .saved = {}};
}

Tensor Conv2d::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  return backward_from(dy, saved.tensors, ctx);
}

const Tensor& Conv2d::saved_input(const Tensor& dy, std::span<const Tensor> saved) const {
  check(saved.size() == kSavedTensors,
        "Conv2d::backward: nothing saved (forward not in training?)");
  const Tensor& x = saved[0];
  const int64_t batch = x.dim(0);
  check(dy.shape() == Shape({batch, output_shape_[0], output_shape_[1], output_shape_[2]}),
        "Conv2d::backward: dy {} does not match the output {} of batch {}", dy.shape(),
        output_shape_, batch);
  return x;
}

void Conv2d::add_weight_grads(const Tensor& x, const Tensor& dy, const LayerContext& ctx) const {
  // dweight: [O, C/groups, k, k] and dbias: [O] accumulate.
  kernels::conv2d_backward_weights(ctx.kernels, kernel_shape(x.dim(0)), x.data(), dy.data(),
                                   weight_grad_.data(), has_bias_ ? bias_grad_.data() : nullptr);
}

Tensor Conv2d::backward_data(const Tensor& dy, const LayerContext& ctx) const {
  const int64_t batch = dy.shape().rank() == 4 ? dy.dim(0) : 0;
  check(dy.shape() == Shape({batch, output_shape_[0], output_shape_[1], output_shape_[2]}),
        "Conv2d::backward: dy {} does not match the output {}", dy.shape(), output_shape_);
  if (!ctx.need_input_grad) return {};
  // dy: [batch, O, Ho, Wo], weight: [O, C/groups, k, k] → dx: [batch, C, H, W]
  Tensor dx(Shape{batch, input_shape_[0], input_shape_[1], input_shape_[2]});
  kernels::conv2d_backward_data(ctx.kernels, kernel_shape(batch), dy.data(), weight_.data(),
                                dx.data());
  return dx;
}

void Conv2d::backward_weight_from(const Tensor& dy, std::span<const Tensor> saved,
                                  const LayerContext& ctx) const {
  add_weight_grads(saved_input(dy, saved), dy, ctx);
}

Tensor Conv2d::backward_from(const Tensor& dy, std::span<const Tensor> saved,
                             const LayerContext& ctx) const {
  const Tensor& x = saved_input(dy, saved);
  add_weight_grads(x, dy, ctx);
  return backward_data(dy, ctx);
}

Tensor Conv2d::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  (void)saved_input(dy, saved.tensors);
  return backward_data(dy, ctx);
}

void Conv2d::backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  backward_weight_from(dy, saved.tensors, ctx);
}

double Conv2d::forward_flops_per_example() const {
  const auto outputs = static_cast<double>(output_shape_.numel());
  const auto taps = static_cast<double>(input_shape_[0] / groups_ * kernel_ * kernel_);
  return outputs * (2.0 * taps + (has_bias_ ? 1.0 : 0.0));
}

LayerNeeds Conv2d::needs() const {
  // Keeps x (forward_consuming: the tensor handed in).
  return {
      .kept_tensor_bytes = {float_bytes(input_shape_.numel())},
      .smallest_temporary_bytes = smaller_activation_bytes(input_shape_, output_shape_),
      .keeps_consumed_input = true,
      .backward_flops = matrix_product_backward_flops(forward_flops_per_example(), global_index()),
      .splits_backward = true,
      .weight_grad_flops = forward_flops_per_example(),
      .weight_work_tensor_bytes = {float_bytes(input_shape_.numel())}};
}

}  // namespace mpipe::nn
