// measure_gemm_peak: a positive rate from the repetitions it says it ran, on this process's
// threads; any shape's rate, a linear layer's (after a warm-up when asked) and its weight
// gradient's alone; the copies of a weight they cycle through.
#include "kernels/gemm_peak.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <chrono>

namespace mpipe::kernels {
namespace {

TEST(GemmPeak, MeasuresForAtLeastTheGivenTimeOnThisProcesssThreads) {
  KernelContext kernels;
  const GemmPeak peak = measure_gemm_peak(kernels, 128, 0.05);
  EXPECT_EQ(peak.size, 128);
  EXPECT_EQ(peak.threads, omp_get_max_threads());
  EXPECT_GE(peak.seconds, 0.05);
  // At least one product of 2·128³ FLOPs ran within the measurement.
  EXPECT_GE(peak.flops_per_s * peak.seconds, 2.0 * 128 * 128 * 128);
}

TEST(GemmPeak, MeasuresAnyShapeAndALinearLayersThreeProducts) {
  KernelContext kernels;
  EXPECT_GT(measure_gemm_rate(kernels, {.m = 16, .k = 64, .n = 32}, 0.01), 0.0);
  const LinearRates linear = measure_linear_rates(kernels, 16, 64, 32, 0.01);
  EXPECT_GT(linear.forward, 0.0);
  EXPECT_GT(linear.input_gradient, 0.0);
  EXPECT_GT(linear.weight_gradient, 0.0);
}

TEST(GemmPeak, WarmsUpForAtLeastTheGivenTimeAndTimesAWeightGradientAlone) {
  KernelContext kernels;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_GT(measure_linear_rates(kernels, 16, 64, 32, 0.0, 1, 0.05).forward, 0.0);
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.05);
  const LinearRates deferred =
      measure_linear_rates(kernels, 16, 64, 32, 0.01, 3, 0.0, kStreamedBytes, /*deferred_rows=*/64);
  EXPECT_GT(deferred.deferred_weight_gradient, 0.0);
  EXPECT_EQ(measure_linear_rates(kernels, 16, 64, 32, 0.01).deferred_weight_gradient, 0.0);
}

TEST(GemmPeak, CyclesThroughAsManyCopiesOfAWeightAsTheStreamedBytesHold) {
  // A 1024 x 1024 weight and its gradient: 8 MiB a copy.
  constexpr double kMiB = 1 << 20;
  EXPECT_EQ(weight_copies(kStreamedBytes, 1024, 1024), 8);
  // scaling_mlp's 24 blocks (25.2 M parameters and their gradients, 201 MB): 24 copies.
  EXPECT_EQ(weight_copies(2.0 * 4.0 * (24.0 * (1024 * 1024 + 1024) + 10250), 1024, 1024), 24);
  // At least 2, whatever the model.
  EXPECT_EQ(weight_copies(1.0 * kMiB, 1024, 1024), 2);
  // At most 512 MiB of copies (4 of a 4096 x 4096 weight: 128 MiB each), and at most 64.
  EXPECT_EQ(weight_copies(8192.0 * kMiB, 4096, 4096), 4);
  EXPECT_EQ(weight_copies(8192.0 * kMiB, 64, 64), 64);
}

}  // namespace
}  // namespace mpipe::kernels
