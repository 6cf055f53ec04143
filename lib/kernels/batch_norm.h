// 2-D batch normalization (per-channel statistics over batch, height, width) through oneDNN.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/context.h"

namespace mpipe::kernels {

// x, y, dx, dy: [batch, channels, height, width] (NCHW); gamma, beta, mean, variance and their
// gradients: [channels]. variance is the biased one (divides by batch * height * width).
struct BatchNormShape {
  int64_t batch = 1;
  int64_t channels = 0, height = 1, width = 1;
  float eps = 1e-5f;

  int64_t per_channel() const { return batch * height * width; }  // elements per statistic
  void validate() const;    // throws Error unless all sizes are positive and eps >= 0
  std::string key() const;  // for the primitive cache
};

// Training mode: y = gamma * (x - mean) / sqrt(variance + eps) + beta with this batch's mean and
// (biased) variance, which are written out for the backward pass and running statistics.
void batch_norm_forward_training(KernelContext& ctx, const BatchNormShape& shape, const float* x,
                                 const float* gamma, const float* beta, float* y, float* mean,
                                 float* variance);
// Inference mode: the same formula with the given (running) statistics.
void batch_norm_forward_inference(KernelContext& ctx, const BatchNormShape& shape, const float* x,
                                  const float* gamma, const float* beta, const float* mean,
                                  const float* variance, float* y);
// Backward of batch_norm_forward_training when batch_statistics (mean and variance are those it
// returned and depend on x), else of batch_norm_forward_inference (fixed statistics).
// Overwrites dx; dgamma += dL/dgamma and dbeta += dL/dbeta (accumulate).
void batch_norm_backward(KernelContext& ctx, const BatchNormShape& shape, bool batch_statistics,
                         const float* x, const float* dy, const float* gamma, const float* mean,
                         const float* variance, float* dx, float* dgamma, float* dbeta);
// The same backward with this call's dgamma and dbeta written (overwritten) into their own [C]
// arrays: batch_norm_backward adds exactly these into its dgamma and dbeta.
void batch_norm_backward_parts(KernelContext& ctx, const BatchNormShape& shape,
                               bool batch_statistics, const float* x, const float* dy,
                               const float* gamma, const float* mean, const float* variance,
                               float* dx, float* dgamma_part, float* dbeta_part);

}  // namespace mpipe::kernels
