// 2-D convolution (stride, padding, dilation, groups) forward and backward through oneDNN.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/context.h"

namespace mpipe::kernels {

// x: [batch, in_channels, height, width], w: [out_channels, in_channels / groups, kernel_h,
// kernel_w], bias: [out_channels], y: [batch, out_channels, out_height(), out_width()], all plain
// row-major (NCHW / OIHW). Dilation 1 means a dense kernel (PyTorch's convention, not oneDNN's).
struct Conv2dShape {
  int64_t batch = 1;
  int64_t in_channels = 0, height = 0, width = 0;
  int64_t out_channels = 0, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // on both sides
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;

  int64_t out_height() const;
  int64_t out_width() const;
  // Throws Error unless the sizes are positive, channels divide by groups and the output is
  // non-empty.
  void validate() const;
  std::string key() const;  // for the primitive cache
};

// w is a parameter: its converted (blocked or bf16) copy is made once per kernels::WeightsFixed
// scope.
// y = conv(x, w) + bias (bias may be nullptr). Overwrites y.
void conv2d_forward(KernelContext& ctx, const Conv2dShape& shape, const float* x, const float* w,
                    const float* bias, float* y);
// dy: [batch, out_channels, out_h, out_w] → dx: [batch, in_channels, height, width]. Overwrites dx.
void conv2d_backward_data(KernelContext& ctx, const Conv2dShape& shape, const float* dy,
                          const float* w, float* dx);
// dw += dL/dw and dbias += dL/dbias (dbias may be nullptr). Accumulates.
void conv2d_backward_weights(KernelContext& ctx, const Conv2dShape& shape, const float* x,
                             const float* dy, float* dw, float* dbias);

}  // namespace mpipe::kernels
