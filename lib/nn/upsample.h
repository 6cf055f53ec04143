// Upsample layer: nearest-neighbour 2-D upsampling of [C, H, W] inputs by an integer factor.
#pragma once

#include <cstdint>

#include "kernels/resampling.h"
#include "nn/layer.h"

namespace mpipe::nn {

// "upsample": one example [C, H, W] → [C, H·scale, W·scale], each output pixel a copy of the
// input pixel under it (a U-Net's decoder doubles its resolution so, then convolves). No
// parameters; keeps nothing.
class Upsample : public Layer {
 public:
  Upsample(int global_index, const Shape& input_shape, int64_t scale);

  std::string_view kind() const override { return "upsample"; }
  Shape output_shape() const override { return output_shape_; }
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  // dx: each input pixel gets the sum of its scale² outputs' gradients (oneDNN's order, the same
  // for every micro-batch).
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

 private:
  kernels::Upsample2dShape kernel_shape(int64_t batch) const;

  Shape input_shape_, output_shape_;
  int64_t scale_;
};

}  // namespace mpipe::nn
