// Upsample layer: shape checks around the oneDNN nearest-neighbour resampling kernels.
#include "nn/upsample.h"

#include "core/error.h"

namespace mpipe::nn {

Upsample::Upsample(int global_index, const Shape& input_shape, int64_t scale)
    : Layer(global_index), input_shape_(input_shape), scale_(scale) {
  check_input(input_shape.rank() == 3 && input_shape.numel() > 0,
              "upsample needs an input [channels, height, width], got {}", input_shape);
  check_input(scale >= 1, "upsample: scale must be >= 1, got {}", scale);
  output_shape_ = Shape{input_shape[0], checked_mul(input_shape[1], scale, "upsampled height"),
                        checked_mul(input_shape[2], scale, "upsampled width")};
}

kernels::Upsample2dShape Upsample::kernel_shape(int64_t batch) const {
  return {.batch = batch,
          .channels = input_shape_[0],
          .height = input_shape_[1],
          .width = input_shape_[2],
          .scale = scale_};
}

Forward Upsample::forward(const Tensor& x, const LayerContext& ctx) {
  check(x.shape().rank() == 4 && x.shape().per_example() == input_shape_,
        "upsample: input {} does not match the layer's input shape {}", x.shape(), input_shape_);
  Forward result{.output = Tensor(output_shape_.batched(x.dim(0))), .saved = {}};
  // x: [batch, C, H, W] → y: [batch, C, H·scale, W·scale]
  kernels::upsample2d_forward(ctx.kernels, kernel_shape(x.dim(0)), x.data(), result.output.data());
  return result;
}

Tensor Upsample::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)saved;
  check(dy.shape().rank() == 4 && dy.shape().per_example() == output_shape_,
        "upsample::backward: dy {} does not match the output shape {}", dy.shape(), output_shape_);
  if (!ctx.need_input_grad) return {};
  Tensor dx(input_shape_.batched(dy.dim(0)));
  kernels::upsample2d_backward(ctx.kernels, kernel_shape(dy.dim(0)), dy.data(), dx.data());
  return dx;
}

double Upsample::forward_flops_per_example() const { return 0.0; }  // copies only

LayerNeeds Upsample::needs() const {
  // Keeps nothing; its backward adds scale² output gradients into each input pixel.
  return {.smallest_temporary_bytes = smaller_activation_bytes(input_shape_, output_shape_),
          .backward_flops = static_cast<double>(output_shape_.numel())};
}

}  // namespace mpipe::nn
