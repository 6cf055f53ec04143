// RMS normalization forward and backward: per-row loops in float with double accumulators.
#include "kernels/rms_norm.h"

#include <cmath>

namespace mpipe::kernels {

void rms_norm_forward(const float* x, const float* gamma, float* y, float* rstd, int64_t rows,
                      int64_t dim, float eps) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double sum_sq = 0.0;
    for (int64_t j = 0; j < dim; ++j) sum_sq += static_cast<double>(xr[j]) * xr[j];
    const auto scale = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(dim) + eps));
    rstd[r] = scale;
#pragma omp simd
    for (int64_t j = 0; j < dim; ++j) yr[j] = xr[j] * scale * gamma[j];
  }
}

void rms_norm_backward_data(const float* x, const float* dy, const float* gamma, const float* rstd,
                            float* dx, int64_t rows, int64_t dim) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float* dyr = dy + r * dim;
    float* dxr = dx + r * dim;
    double dot = 0.0;  // sum of gamma * dy * x over the row
    for (int64_t j = 0; j < dim; ++j) dot += static_cast<double>(gamma[j]) * dyr[j] * xr[j];
    const float s = rstd[r];
    const auto correction = static_cast<float>(dot / static_cast<double>(dim)) * s * s;
#pragma omp simd
    for (int64_t j = 0; j < dim; ++j) dxr[j] = s * (gamma[j] * dyr[j] - xr[j] * correction);
  }
}

void rms_norm_backward_weights(const float* x, const float* dy, const float* rstd, float* dgamma,
                               int64_t rows, int64_t dim) {
  // Each column sums its rows in row order: the same bits on any thread count.
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < dim; ++j) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r) sum += dy[r * dim + j] * x[r * dim + j] * rstd[r];
    dgamma[j] += sum;
  }
}

void rms_norm_backward(const float* x, const float* dy, const float* gamma, const float* rstd,
                       float* dx, float* dgamma, int64_t rows, int64_t dim) {
  rms_norm_backward_data(x, dy, gamma, rstd, dx, rows, dim);
  rms_norm_backward_weights(x, dy, rstd, dgamma, rows, dim);
}

}  // namespace mpipe::kernels
