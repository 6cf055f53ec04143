// Naive reference kernels in double precision for convolution, batch norm, pooling and
// upsampling: the test oracle for the oneDNN kernels in conv.h, batch_norm.h, pooling.h and
// resampling.h.
#pragma once

#include <cstdint>

#include "kernels/batch_norm.h"
#include "kernels/conv.h"
#include "kernels/pooling.h"
#include "kernels/resampling.h"

namespace mpipe::kernels::reference {

// Same contracts as kernels::conv2d_* (the weight gradients accumulate).
void conv2d_forward(const Conv2dShape& shape, const float* x, const float* w, const float* bias,
                    float* y);
void conv2d_backward_data(const Conv2dShape& shape, const float* dy, const float* w, float* dx);
void conv2d_backward_weights(const Conv2dShape& shape, const float* x, const float* dy, float* dw,
                             float* dbias);

// Same contracts as kernels::batch_norm_* (the parameter gradients accumulate).
void batch_norm_forward_training(const BatchNormShape& shape, const float* x, const float* gamma,
                                 const float* beta, float* y, float* mean, float* variance);
void batch_norm_forward_inference(const BatchNormShape& shape, const float* x, const float* gamma,
                                  const float* beta, const float* mean, const float* variance,
                                  float* y);
void batch_norm_backward(const BatchNormShape& shape, bool batch_statistics, const float* x,
                         const float* dy, const float* gamma, const float* mean,
                         const float* variance, float* dx, float* dgamma, float* dbeta);

// Same contracts as kernels::pool2d_* without the workspace: max pooling's backward routes each
// gradient to the first maximum of its window (row-major order), recomputed from x.
void pool2d_forward(const Pool2dShape& shape, const float* x, float* y);
void pool2d_backward(const Pool2dShape& shape, const float* x, const float* dy, float* dx);

// Same contracts as kernels::upsample2d_*: output pixel (i, j) copies input pixel
// (i / scale, j / scale); the backward sums those copies' gradients.
void upsample2d_forward(const Upsample2dShape& shape, const float* x, float* y);
void upsample2d_backward(const Upsample2dShape& shape, const float* dy, float* dx);

}  // namespace mpipe::kernels::reference
