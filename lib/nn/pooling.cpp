// Pooling layers: shape checks and the oneDNN pooling kernels (max pooling keeps the workspace).
#include "nn/pooling.h"

#include "core/error.h"

namespace mpipe::nn {
namespace {

std::string_view name_of(kernels::PoolKind kind) {
  return kind == kernels::PoolKind::kMax ? "max_pool2d" : "avg_pool2d";
}

void check_example_input(const Shape& input_shape, std::string_view name) {
  check_input(input_shape.rank() == 3 && input_shape.numel() > 0,
              "{} needs an input [channels, height, width], got {}", name, input_shape);
}

Shape batched(int64_t batch, const Shape& example) {
  std::vector<int64_t> dims{batch};
  dims.insert(dims.end(), example.dims().begin(), example.dims().end());
  return Shape(std::move(dims));
}

void check_input_tensor(const Tensor& x, const Shape& input_shape, std::string_view name) {
  check(x.shape().rank() == 4 && x.shape().per_example() == input_shape,
        "{}: input {} does not match the layer's input shape {}", name, x.shape(), input_shape);
}

}  // namespace

Pool2d::Pool2d(int global_index, const Shape& input_shape, kernels::PoolKind kind, int64_t kernel,
               int64_t stride, int64_t padding)
    : Layer(global_index),
      input_shape_(input_shape),
      pool_kind_(kind),
      kernel_(kernel),
      stride_(stride),
      padding_(padding) {
  const std::string_view name = name_of(kind);
  check_example_input(input_shape, name);
  check_input(kernel >= 1, "{}: kernel must be >= 1, got {}", name, kernel);
  check_input(stride >= 1, "{}: stride must be >= 1, got {}", name, stride);
  check_input(padding >= 0 && padding < kernel,
              "{}: padding must be >= 0 and smaller than the kernel {}, got {}", name, kernel,
              padding);
  // SizeError when the padded input (and so the output) overflows 64 bits.
  const int64_t padding_both_sides = checked_mul(2, padding, "padding on both sides");
  const int64_t padded_height =
      checked_add(input_shape[1], padding_both_sides, "input height with padding");
  const int64_t padded_width =
      checked_add(input_shape[2], padding_both_sides, "input width with padding");
  check_input(padded_height >= kernel && padded_width >= kernel,
              "{}: kernel {} does not fit the input {} with padding {}", name, kernel, input_shape,
              padding);
  const kernels::Pool2dShape s = kernel_shape(1);
  output_shape_ = Shape{input_shape[0], s.out_height(), s.out_width()};
}

std::string_view Pool2d::kind() const { return name_of(pool_kind_); }

kernels::Pool2dShape Pool2d::kernel_shape(int64_t batch) const {
  return {.batch = batch,
          .channels = input_shape_[0],
          .height = input_shape_[1],
          .width = input_shape_[2],
          .kernel_h = kernel_,
          .kernel_w = kernel_,
          .stride_h = stride_,
          .stride_w = stride_,
          .pad_h = padding_,
          .pad_w = padding_,
          .kind = pool_kind_};
}

Forward Pool2d::forward(const Tensor& x, const LayerContext& ctx) {
  check_input_tensor(x, input_shape_, kind());
  const kernels::Pool2dShape shape = kernel_shape(x.dim(0));
  Forward result{.output = Tensor(batched(x.dim(0), output_shape_)), .saved = {}};
  const size_t workspace_bytes =
      ctx.training ? kernels::pool2d_workspace_bytes(ctx.kernels, shape) : 0;
  // The workspace's bytes live in a float tensor, so the stage can store it like any other.
  Tensor workspace(
      Shape{static_cast<int64_t>((workspace_bytes + sizeof(float) - 1) / sizeof(float))});
  // x: [batch, C, H, W] → y: [batch, C, Ho, Wo]
  kernels::pool2d_forward(ctx.kernels, shape, x.data(), result.output.data(),
                          workspace_bytes > 0 ? workspace.data() : nullptr);
  if (workspace_bytes > 0) result.saved.tensors.push_back(std::move(workspace));
  return result;
}

Tensor Pool2d::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  check(dy.shape().rank() == 4 && dy.shape().per_example() == output_shape_,
        "{}::backward: dy {} does not match the output shape {}", kind(), dy.shape(),
        output_shape_);
  const bool is_max = pool_kind_ == kernels::PoolKind::kMax;
  check(!is_max || saved.tensors.size() == 1,
        "{}::backward: nothing saved (forward not in training?)", kind());
  if (!ctx.need_input_grad) return {};
  Tensor dx(batched(dy.dim(0), input_shape_));
  kernels::pool2d_backward(ctx.kernels, kernel_shape(dy.dim(0)), dy.data(),
                           is_max ? saved.tensors[0].data() : nullptr, dx.data());
  return dx;
}

double Pool2d::forward_flops_per_example() const {
  return static_cast<double>(output_shape_.numel() * kernel_ * kernel_);
}

GlobalAvgPool::GlobalAvgPool(int global_index, const Shape& input_shape)
    : Layer(global_index), input_shape_(input_shape) {
  check_example_input(input_shape, "global_avg_pool");
}

kernels::Pool2dShape GlobalAvgPool::kernel_shape(int64_t batch) const {
  return {.batch = batch,
          .channels = input_shape_[0],
          .height = input_shape_[1],
          .width = input_shape_[2],
          .kernel_h = input_shape_[1],
          .kernel_w = input_shape_[2],
          .kind = kernels::PoolKind::kAvgIncludePadding};
}

Forward GlobalAvgPool::forward(const Tensor& x, const LayerContext& ctx) {
  check_input_tensor(x, input_shape_, kind());
  Forward result{.output = Tensor(Shape{x.dim(0), input_shape_[0]}), .saved = {}};
  // x: [batch, C, H, W] → y: [batch, C] (stored as [batch, C, 1, 1])
  kernels::pool2d_forward(ctx.kernels, kernel_shape(x.dim(0)), x.data(), result.output.data(),
                          nullptr);
  return result;
}

Tensor GlobalAvgPool::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)saved;
  check(dy.shape().rank() == 2 && dy.dim(1) == input_shape_[0],
        "global_avg_pool::backward: dy {} is not [batch, {}]", dy.shape(), input_shape_[0]);
  if (!ctx.need_input_grad) return {};
  Tensor dx(batched(dy.dim(0), input_shape_));
  kernels::pool2d_backward(ctx.kernels, kernel_shape(dy.dim(0)), dy.data(), nullptr, dx.data());
  return dx;
}

double GlobalAvgPool::forward_flops_per_example() const {
  return static_cast<double>(input_shape_.numel());
}

LayerNeeds Pool2d::needs() const {
  LayerNeeds needs{
      .smallest_temporary_bytes = smaller_activation_bytes(input_shape_, output_shape_),
      .backward_flops = forward_flops_per_example()};
  if (pool_kind_ == kernels::PoolKind::kMax) {
    // oneDNN's workspace: the position of each maximum, u8 while the window has < 256 taps.
    needs.kept_packed_bytes =
        static_cast<double>(output_shape_.numel()) * (kernel_ * kernel_ < 256 ? 1.0 : 4.0);
  }
  return needs;
}

LayerNeeds GlobalAvgPool::needs() const {
  // Keeps nothing: the gradient spreads evenly over each channel.
  return {.smallest_temporary_bytes = smaller_activation_bytes(input_shape_, output_shape()),
          .backward_flops = forward_flops_per_example()};
}

}  // namespace mpipe::nn
