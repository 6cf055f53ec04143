// RMS-norm kernel tests: against the double-precision reference, and the same bits on any thread
// count.
#include "kernels/rms_norm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "expect_near.h"
#include "kernels/transformer_reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::expect_near_all;
using testing::random_values;

constexpr int64_t kRows = 13, kDim = 37;
constexpr float kEps = 1e-5f;

TEST(RmsNormKernel, ForwardMatchesReference) {
  // An offset: the RMS is not the standard deviation (no mean is taken out).
  const auto x = random_values(kRows * kDim, 0, 1.0f, 4.0f);
  const auto gamma = random_values(kDim, 1, 0.5f, 1.5f);
  std::vector<float> y(x.size()), rstd(kRows), y_ref(x.size()), rstd_ref(kRows);
  rms_norm_forward(x.data(), gamma.data(), y.data(), rstd.data(), kRows, kDim, kEps);
  reference::rms_norm_forward(x.data(), gamma.data(), y_ref.data(), rstd_ref.data(), kRows, kDim,
                              kEps);
  expect_near_all(y, y_ref, 1e-6, "y");
  expect_near_all(rstd, rstd_ref, 1e-6, "rstd");
}

TEST(RmsNormKernel, UnitScaleGivesRowsWithUnitMeanSquare) {
  const auto x = random_values(kRows * kDim, 2, -3.0f, 5.0f);
  const std::vector<float> gamma(kDim, 1.0f);
  std::vector<float> y(x.size()), rstd(kRows);
  rms_norm_forward(x.data(), gamma.data(), y.data(), rstd.data(), kRows, kDim, kEps);
  for (int64_t r = 0; r < kRows; ++r) {
    double sum_sq = 0.0;
    for (int64_t j = 0; j < kDim; ++j) sum_sq += double(y[r * kDim + j]) * y[r * kDim + j];
    EXPECT_NEAR(sum_sq / kDim, 1.0, 1e-4) << "row " << r;
  }
}

TEST(RmsNormKernel, BackwardMatchesReferenceAndAccumulatesTheScaleGradient) {
  const auto x = random_values(kRows * kDim, 3, -2.0f, 3.0f);
  const auto dy = random_values(kRows * kDim, 4);
  const auto gamma = random_values(kDim, 5, 0.5f, 1.5f);
  std::vector<float> y(x.size()), rstd(kRows);
  rms_norm_forward(x.data(), gamma.data(), y.data(), rstd.data(), kRows, kDim, kEps);
  // Both start from the same non-zero gradient: the kernel must add, not overwrite.
  const auto start = random_values(kDim, 6);
  std::vector<float> dx(x.size()), dgamma = start, dx_ref(x.size()), dgamma_ref = start;
  rms_norm_backward(x.data(), dy.data(), gamma.data(), rstd.data(), dx.data(), dgamma.data(), kRows,
                    kDim);
  reference::rms_norm_backward(x.data(), dy.data(), gamma.data(), dx_ref.data(), dgamma_ref.data(),
                               kRows, kDim, kEps);
  expect_near_all(dx, dx_ref, 1e-5, "dx");
  expect_near_all(dgamma, dgamma_ref, 1e-5, "dgamma");
}

TEST(RmsNormKernel, SameBitsOnOneThreadAndOnSeveral) {
  const auto x = random_values(kRows * kDim, 7), dy = random_values(kRows * kDim, 8);
  const auto gamma = random_values(kDim, 9, 0.5f, 1.5f);
  const auto run = [&](int threads) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<float> y(x.size()), rstd(kRows), dx(x.size()), dgamma(kDim, 0.0f);
    rms_norm_forward(x.data(), gamma.data(), y.data(), rstd.data(), kRows, kDim, kEps);
    rms_norm_backward(x.data(), dy.data(), gamma.data(), rstd.data(), dx.data(), dgamma.data(),
                      kRows, kDim);
    omp_set_num_threads(before);
    y.insert(y.end(), dx.begin(), dx.end());
    y.insert(y.end(), dgamma.begin(), dgamma.end());
    return y;
  };
  EXPECT_EQ(run(1), run(3));
}

}  // namespace
}  // namespace mpipe::kernels
