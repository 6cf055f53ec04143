// Pooling layers over [C, H, W] inputs: max and average pooling, and global average pooling.
#pragma once

#include <cstdint>

#include "kernels/pooling.h"
#include "nn/layer.h"

namespace mpipe::nn {

// One example [C, H, W] → [C, Ho, Wo], Ho = (H + 2·padding − kernel) / stride + 1 (floor);
// square kernel, stride and padding (both sides, smaller than the kernel). No parameters.
class Pool2d : public Layer {
 public:
  Pool2d(int global_index, const Shape& input_shape, kernels::PoolKind kind, int64_t kernel,
         int64_t stride, int64_t padding);

  std::string_view kind() const override;
  Shape output_shape() const override { return output_shape_; }
  // x: [batch, C, H, W] → y: [batch, C, Ho, Wo]. Max pooling in training saves the positions
  // of the maxima (oneDNN's workspace, packed in a float tensor); average pooling saves nothing.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

 private:
  kernels::Pool2dShape kernel_shape(int64_t batch) const;

  Shape input_shape_, output_shape_;
  kernels::PoolKind pool_kind_;
  int64_t kernel_, stride_, padding_;
};

// "max_pool2d": padding counts as −infinity.
class MaxPool2d : public Pool2d {
 public:
  MaxPool2d(int global_index, const Shape& input_shape, int64_t kernel, int64_t stride,
            int64_t padding = 0)
      : Pool2d(global_index, input_shape, kernels::PoolKind::kMax, kernel, stride, padding) {}
};

// "avg_pool2d": with count_include_pad (PyTorch's default) every window divides by kernel²,
// otherwise by its number of in-bounds elements.
class AvgPool2d : public Pool2d {
 public:
  AvgPool2d(int global_index, const Shape& input_shape, int64_t kernel, int64_t stride,
            int64_t padding = 0, bool count_include_pad = true)
      : Pool2d(global_index, input_shape,
               count_include_pad ? kernels::PoolKind::kAvgIncludePadding
                                 : kernels::PoolKind::kAvgExcludePadding,
               kernel, stride, padding) {}
};

// "global_avg_pool": one example [C, H, W] → [C], the mean of each channel. No parameters.
class GlobalAvgPool : public Layer {
 public:
  GlobalAvgPool(int global_index, const Shape& input_shape);

  std::string_view kind() const override { return "global_avg_pool"; }
  Shape output_shape() const override { return {input_shape_[0]}; }
  // x: [batch, C, H, W] → y: [batch, C]. Saves nothing.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

 private:
  kernels::Pool2dShape kernel_shape(int64_t batch) const;

  Shape input_shape_;
};

}  // namespace mpipe::nn
