// oneDNN batch normalization kernels against the naive reference, in training and inference mode.
#include "kernels/batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "expect_near.h"
#include "kernels/conv_reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::random_values;

// This kernel's tolerance against its reference.
void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                     const char* what) {
  testing::expect_near_all(actual, expected, 2e-4, what);
}

std::vector<BatchNormShape> shapes() {
  return {{.batch = 4, .channels = 3, .height = 5, .width = 6, .eps = 1e-5f},
          {.batch = 2, .channels = 5, .height = 1, .width = 1, .eps = 1e-3f},
          {.batch = 1, .channels = 2, .height = 7, .width = 3, .eps = 1e-5f}};
}

// Inputs with a per-channel offset and scale, so the statistics are not trivially 0 and 1/3.
std::vector<float> input_for(const BatchNormShape& s) {
  std::vector<float> x = random_values(s.batch * s.channels * s.height * s.width, 21);
  const int64_t plane = s.height * s.width;
  for (size_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<float>((static_cast<int64_t>(i) / plane) % s.channels);
    x[i] = (1.0f + c) * x[i] + 0.5f * c;
  }
  return x;
}

TEST(BatchNormKernel, TrainingForwardMatchesReference) {
  KernelContext ctx;
  for (const BatchNormShape& s : shapes()) {
    SCOPED_TRACE(s.key());
    const auto x = input_for(s);
    const auto gamma = random_values(s.channels, 22, 0.5f, 1.5f);
    const auto beta = random_values(s.channels, 23);
    std::vector<float> y(x.size()), mean(static_cast<size_t>(s.channels)), var(mean.size());
    std::vector<float> y_ref(x.size()), mean_ref(mean.size()), var_ref(mean.size());
    batch_norm_forward_training(ctx, s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                var.data());
    reference::batch_norm_forward_training(s, x.data(), gamma.data(), beta.data(), y_ref.data(),
                                           mean_ref.data(), var_ref.data());
    expect_near_all(mean, mean_ref, "mean");
    expect_near_all(var, var_ref, "variance");
    expect_near_all(y, y_ref, "y");
  }
}

TEST(BatchNormKernel, InferenceForwardUsesGivenStatistics) {
  KernelContext ctx;
  for (const BatchNormShape& s : shapes()) {
    SCOPED_TRACE(s.key());
    const auto x = input_for(s);
    const auto gamma = random_values(s.channels, 22, 0.5f, 1.5f);
    const auto beta = random_values(s.channels, 23);
    const auto mean = random_values(s.channels, 24);
    const auto var = random_values(s.channels, 25, 0.5f, 2.0f);
    std::vector<float> y(x.size()), y_ref(x.size());
    batch_norm_forward_inference(ctx, s, x.data(), gamma.data(), beta.data(), mean.data(),
                                 var.data(), y.data());
    reference::batch_norm_forward_inference(s, x.data(), gamma.data(), beta.data(), mean.data(),
                                            var.data(), y_ref.data());
    expect_near_all(y, y_ref, "y");
  }
}

TEST(BatchNormKernel, BackwardMatchesReferenceAndAccumulatesParameterGradients) {
  KernelContext ctx;
  for (const BatchNormShape& s : shapes()) {
    for (bool batch_statistics : {true, false}) {
      SCOPED_TRACE(s.key() + (batch_statistics ? " batch statistics" : " given statistics"));
      const auto x = input_for(s);
      const auto dy = random_values(static_cast<int64_t>(x.size()), 26);
      const auto gamma = random_values(s.channels, 22, 0.5f, 1.5f);
      const auto beta = random_values(s.channels, 23);
      std::vector<float> y(x.size()), mean(static_cast<size_t>(s.channels)), var(mean.size());
      reference::batch_norm_forward_training(s, x.data(), gamma.data(), beta.data(), y.data(),
                                             mean.data(), var.data());
      std::vector<float> dx(x.size()), dgamma = random_values(s.channels, 27),
                                       dbeta = random_values(s.channels, 28);
      std::vector<float> dx_ref(x.size()), dgamma_ref = dgamma, dbeta_ref = dbeta;
      batch_norm_backward(ctx, s, batch_statistics, x.data(), dy.data(), gamma.data(), mean.data(),
                          var.data(), dx.data(), dgamma.data(), dbeta.data());
      reference::batch_norm_backward(s, batch_statistics, x.data(), dy.data(), gamma.data(),
                                     mean.data(), var.data(), dx_ref.data(), dgamma_ref.data(),
                                     dbeta_ref.data());
      expect_near_all(dx, dx_ref, "dx");
      expect_near_all(dgamma, dgamma_ref, "dgamma");
      expect_near_all(dbeta, dbeta_ref, "dbeta");
    }
  }
}

TEST(BatchNormKernel, TrainingOutputHasZeroMeanAndUnitVariancePerChannelBeforeAffine) {
  KernelContext ctx;
  const BatchNormShape s{.batch = 3, .channels = 2, .height = 4, .width = 4, .eps = 0.0f};
  const auto x = input_for(s);
  const std::vector<float> gamma(2, 1.0f), beta(2, 0.0f);
  std::vector<float> y(x.size()), mean(2), var(2);
  batch_norm_forward_training(ctx, s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                              var.data());
  for (int64_t c = 0; c < s.channels; ++c) {
    double sum = 0.0, squares = 0.0;
    for (int64_t n = 0; n < s.batch; ++n) {
      for (int64_t i = 0; i < 16; ++i) {
        const double v = y[static_cast<size_t>((n * s.channels + c) * 16 + i)];
        sum += v;
        squares += v * v;
      }
    }
    EXPECT_NEAR(sum / 48.0, 0.0, 1e-5);
    EXPECT_NEAR(squares / 48.0, 1.0, 1e-4);
  }
}

}  // namespace
}  // namespace mpipe::kernels
