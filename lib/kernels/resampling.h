// Nearest-neighbour 2-D upsampling by an integer factor, forward and backward, through oneDNN.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/context.h"

namespace mpipe::kernels {

// x, dx: [batch, channels, height, width]; y, dy: [batch, channels, height * scale,
// width * scale], each output pixel a copy of the input pixel it lies over.
struct Upsample2dShape {
  int64_t batch = 1;
  int64_t channels = 0, height = 0, width = 0;
  int64_t scale = 2;

  // Throws Error unless every size is positive.
  void validate() const;
  std::string key() const;  // for the primitive cache
};

// Overwrites y.
void upsample2d_forward(KernelContext& ctx, const Upsample2dShape& shape, const float* x, float* y);
// Overwrites dx: each input pixel's gradient is the sum of its scale x scale outputs' gradients.
void upsample2d_backward(KernelContext& ctx, const Upsample2dShape& shape, const float* dy,
                         float* dx);

}  // namespace mpipe::kernels
