// 2-D max and average pooling forward and backward through oneDNN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/context.h"

namespace mpipe::kernels {

enum class PoolKind {
  kMax,                // padding counts as -infinity
  kAvgIncludePadding,  // divides by kernel_h * kernel_w (PyTorch's count_include_pad=True)
  kAvgExcludePadding,  // divides by the number of in-bounds elements
};

// x, dx: [batch, channels, height, width]; y, dy: [batch, channels, out_height(), out_width()].
// Global average pooling is kAvg* with the kernel covering the whole input.
struct Pool2dShape {
  int64_t batch = 1;
  int64_t channels = 0, height = 0, width = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // on both sides
  PoolKind kind = PoolKind::kMax;

  int64_t out_height() const { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  int64_t out_width() const { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
  // Throws Error unless sizes are positive, the kernel fits the padded input and every padding
  // is smaller than the kernel.
  void validate() const;
  std::string key() const;  // for the primitive cache
};

// Bytes of the workspace a training-mode forward writes for the backward pass (the positions
// of the maxima for kMax; 0 for average pooling).
size_t pool2d_workspace_bytes(KernelContext& ctx, const Pool2dShape& shape);

// Overwrites y. workspace: pool2d_workspace_bytes() bytes, or nullptr for an inference-only
// forward (no backward will follow).
void pool2d_forward(KernelContext& ctx, const Pool2dShape& shape, const float* x, float* y,
                    void* workspace);
// Overwrites dx. workspace: what pool2d_forward wrote (ignored for average pooling).
void pool2d_backward(KernelContext& ctx, const Pool2dShape& shape, const float* dy,
                     const void* workspace, float* dx);

}  // namespace mpipe::kernels
