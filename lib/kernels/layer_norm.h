// Layer normalization over the last axis through oneDNN: forward with statistics, and backward.
#pragma once

#include <cstdint>

#include "kernels/context.h"

namespace mpipe::kernels {

// y = (x - mean) / sqrt(variance + eps) * gamma + beta, per row.
// x, y: [rows, dim]; gamma, beta: [dim]; mean, variance: [rows] (written, for backward).
void layer_norm_forward(KernelContext& ctx, const float* x, const float* gamma, const float* beta,
                        float* y, float* mean, float* variance, int64_t rows, int64_t dim,
                        float eps);

// x, dy, dx: [rows, dim]; gamma, dgamma, dbeta: [dim]; mean, variance: [rows] from forward.
// dx is overwritten; dgamma and dbeta are accumulated (+=).
void layer_norm_backward(KernelContext& ctx, const float* x, const float* dy, const float* gamma,
                         const float* mean, const float* variance, float* dx, float* dgamma,
                         float* dbeta, int64_t rows, int64_t dim, float eps);
// The same backward with this call's dgamma and dbeta written (overwritten) into their own
// [dim] arrays: layer_norm_backward adds exactly these into its dgamma and dbeta.
void layer_norm_backward_parts(KernelContext& ctx, const float* x, const float* dy,
                               const float* gamma, const float* mean, const float* variance,
                               float* dx, float* dgamma_part, float* dbeta_part, int64_t rows,
                               int64_t dim, float eps);

}  // namespace mpipe::kernels
