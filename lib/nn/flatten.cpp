// Flatten layer: reshapes between [batch, ...] and [batch, numel].
#include "nn/flatten.h"

#include <vector>

#include "core/error.h"

namespace mpipe::nn {

Flatten::Flatten(int global_index, const Shape& input_shape)
    : Layer(global_index), input_shape_(input_shape) {
  check_input(input_shape.rank() >= 1 && input_shape.numel() > 0,
              "flatten needs a non-empty input, got {}", input_shape);
}

Forward Flatten::forward(const Tensor& x, const LayerContext& ctx) {
  (void)ctx;
  check(x.shape().rank() >= 1 && x.shape().per_example() == input_shape_,
        "flatten: input {} does not match the layer's input shape {}", x.shape(), input_shape_);
  return {.output = Tensor(x).reshaped(Shape{x.dim(0), input_shape_.numel()}), .saved = {}};
}

Tensor Flatten::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)saved;
  check(dy.shape() == Shape({dy.dim(0), input_shape_.numel()}),
        "flatten::backward: dy {} does not match [batch, {}]", dy.shape(), input_shape_.numel());
  if (!ctx.need_input_grad) return {};
  std::vector<int64_t> dims = {dy.dim(0)};
  dims.insert(dims.end(), input_shape_.dims().begin(), input_shape_.dims().end());
  return Tensor(dy).reshaped(Shape(std::move(dims)));
}

LayerNeeds Flatten::needs() const {
  // Keeps nothing; its backward is a copy (no FLOPs).
  return {.smallest_temporary_bytes = float_bytes(input_shape_.numel())};
}

}  // namespace mpipe::nn
