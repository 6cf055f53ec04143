// RMS normalization over the last axis (oneDNN 2.6 has none): forward with the reciprocal RMS of
// each row, and backward, as loops the compiler vectorizes.
#pragma once

#include <cstdint>

namespace mpipe::kernels {

// y = x / sqrt(mean(x^2) + eps) * gamma, per row.
// x, y: [rows, dim]; gamma: [dim]; rstd: [rows] = 1 / sqrt(mean(x^2) + eps) (written, for
// backward). Rows run in parallel, each row's sums in one fixed order: the same bits on any
// thread count.
void rms_norm_forward(const float* x, const float* gamma, float* y, float* rstd, int64_t rows,
                      int64_t dim, float eps);

// x, dy, dx: [rows, dim]; gamma, dgamma: [dim]; rstd: [rows] from forward. dx is overwritten,
// dgamma accumulated (+=) row by row in row order, columns in parallel.
//   dx = rstd * (gamma * dy - x * rstd^2 * mean(gamma * dy * x)),  dgamma += sum_rows dy * x * rstd
void rms_norm_backward(const float* x, const float* dy, const float* gamma, const float* rstd,
                       float* dx, float* dgamma, int64_t rows, int64_t dim);
// Its two halves, which rms_norm_backward runs in turn (the same operations in the same order):
// dx only, and dgamma only.
void rms_norm_backward_data(const float* x, const float* dy, const float* gamma, const float* rstd,
                            float* dx, int64_t rows, int64_t dim);
void rms_norm_backward_weights(const float* x, const float* dy, const float* rstd, float* dgamma,
                               int64_t rows, int64_t dim);

}  // namespace mpipe::kernels
