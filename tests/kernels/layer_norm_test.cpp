// Layer-norm kernel tests: oneDNN against the double-precision reference.
#include "kernels/layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "expect_near.h"
#include "kernels/transformer_reference.h"

namespace mpipe::kernels {
namespace {

std::vector<float> random_values(int64_t n, uint32_t stream, float scale = 1.0f,
                                 float offset = 0.0f) {
  const CounterRng rng(11, RngPurpose::kData, 0x1A, stream);
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = offset + scale * (2.0f * rng.uniform(i) - 1.0f);
  return out;
}

using testing::expect_near_all;

constexpr int64_t kRows = 13, kDim = 37;
constexpr float kEps = 1e-5f;

TEST(LayerNormKernel, ForwardMatchesReference) {
  KernelContext ctx;
  // An offset makes the mean large compared with the spread, which a one-pass variance gets wrong.
  const auto x = random_values(kRows * kDim, 0, 2.0f, 3.0f);
  const auto gamma = random_values(kDim, 1, 0.5f, 1.0f), beta = random_values(kDim, 2);
  std::vector<float> y(x.size()), mean(kRows), var(kRows);
  std::vector<float> y_ref(x.size()), mean_ref(kRows), var_ref(kRows);
  layer_norm_forward(ctx, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(),
                     kRows, kDim, kEps);
  reference::layer_norm_forward(x.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(),
                                var_ref.data(), kRows, kDim, kEps);
  expect_near_all(y, y_ref, 1e-5f, "y");
  expect_near_all(mean, mean_ref, 1e-6f, "mean");
  expect_near_all(var, var_ref, 1e-5f, "variance");
}

TEST(LayerNormKernel, UnitScaleZeroShiftGivesRowsWithZeroMeanAndUnitVariance) {
  KernelContext ctx;
  const auto x = random_values(kRows * kDim, 3, 5.0f, -2.0f);
  const std::vector<float> gamma(kDim, 1.0f), beta(kDim, 0.0f);
  std::vector<float> y(x.size()), mean(kRows), var(kRows);
  layer_norm_forward(ctx, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(),
                     kRows, kDim, kEps);
  for (int64_t r = 0; r < kRows; ++r) {
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t j = 0; j < kDim; ++j) sum += y[r * kDim + j];
    for (int64_t j = 0; j < kDim; ++j) sum_sq += y[r * kDim + j] * y[r * kDim + j];
    EXPECT_NEAR(sum / kDim, 0.0, 1e-5) << "row " << r;
    EXPECT_NEAR(sum_sq / kDim, 1.0, 1e-3) << "row " << r;
  }
}

TEST(LayerNormKernel, BackwardMatchesReferenceAndAccumulatesParameterGradients) {
  KernelContext ctx;
  const auto x = random_values(kRows * kDim, 4, 2.0f, 1.0f);
  const auto dy = random_values(kRows * kDim, 5);
  const auto gamma = random_values(kDim, 6, 0.5f, 1.0f), beta = random_values(kDim, 7);
  std::vector<float> y(x.size()), mean(kRows), var(kRows);
  layer_norm_forward(ctx, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(),
                     kRows, kDim, kEps);
  // Both start from the same non-zero gradients: the kernel must add, not overwrite.
  const auto start = random_values(kDim, 8);
  std::vector<float> dx(x.size()), dgamma = start, dbeta = start;
  std::vector<float> dx_ref(x.size()), dgamma_ref = start, dbeta_ref = start;
  layer_norm_backward(ctx, x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(),
                      dgamma.data(), dbeta.data(), kRows, kDim, kEps);
  reference::layer_norm_backward(x.data(), dy.data(), gamma.data(), mean.data(), var.data(),
                                 dx_ref.data(), dgamma_ref.data(), dbeta_ref.data(), kRows, kDim,
                                 kEps);
  expect_near_all(dx, dx_ref, 1e-4f, "dx");
  expect_near_all(dgamma, dgamma_ref, 1e-4f, "dgamma");
  expect_near_all(dbeta, dbeta_ref, 1e-4f, "dbeta");
}

TEST(LayerNormKernel, ReferenceBackwardMatchesFiniteDifferences) {
  constexpr int64_t rows = 2, dim = 5;
  const auto x = random_values(rows * dim, 9, 1.0f, 0.5f);
  const auto dy = random_values(rows * dim, 10);
  const auto gamma = random_values(dim, 11, 0.5f, 1.0f), beta = random_values(dim, 12);
  auto loss = [&](const std::vector<float>& input) {
    std::vector<float> y(input.size()), mean(rows), var(rows);
    reference::layer_norm_forward(input.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                  var.data(), rows, dim, kEps);
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i) sum += double(y[i]) * dy[i];
    return sum;
  };
  std::vector<float> y(x.size()), mean(rows), var(rows), dx(x.size()), dgamma(dim), dbeta(dim);
  reference::layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                var.data(), rows, dim, kEps);
  reference::layer_norm_backward(x.data(), dy.data(), gamma.data(), mean.data(), var.data(),
                                 dx.data(), dgamma.data(), dbeta.data(), rows, dim, kEps);
  for (size_t i = 0; i < x.size(); ++i) {
    auto plus = x, minus = x;
    plus[i] += 1e-2f;
    minus[i] -= 1e-2f;
    EXPECT_NEAR(dx[i], (loss(plus) - loss(minus)) / 2e-2, 2e-3) << "dx[" << i << "]";
  }
}

}  // namespace
}  // namespace mpipe::kernels
