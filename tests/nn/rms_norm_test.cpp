// Tests for the RmsNorm layer: gradients, normalization and shape checks.
#include "nn/rms_norm.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "forward_consuming_check.h"
#include "gradient_check.h"
#include "nn/param_buffer.h"
#include "split_backward_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, float scale = 1.0f, float offset = 0.0f) {
  Tensor t = testing::uniform_tensor(std::move(shape), CounterRng(22, RngPurpose::kData, 3, 0));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = offset + scale * t[i];
  return t;
}

TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  RmsNorm layer(1, Shape{4, 6});
  testing::expect_gradients_match(layer, random_tensor({3, 4, 6}, 2.0f, -0.5f), ctx);
}

TEST(RmsNorm, ForwardConsumingKeepsTheInputItIsHanded) {
  kernels::KernelContext kernels;
  RmsNorm layer(1, Shape{4, 6});
  testing::expect_forward_consuming_keeps_input(layer, random_tensor({3, 4, 6}), kernels);
}

TEST(RmsNorm, DefaultWeightGivesRowsWithUnitMeanSquareAndKeepsTheirMean) {
  kernels::KernelContext kernels;
  RmsNorm layer(3, Shape{2, 16});
  Layer* layers[] = {&layer};
  ParamBuffer params(layers);
  params.initialize(1);
  // A large offset: a layer norm would remove it, an RMS norm keeps every row's sign pattern.
  const Tensor x = random_tensor({2, 2, 16}, 4.0f, 10.0f);
  const Tensor y = layer.forward(x, {.kernels = kernels, .training = false}).output;
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t row = 0; row < 4; ++row) {
    double sum_sq = 0.0;
    for (int64_t j = 0; j < 16; ++j) {
      sum_sq += y[row * 16 + j] * y[row * 16 + j];
      EXPECT_GT(y[row * 16 + j], 0.0f);
    }
    EXPECT_NEAR(sum_sq / 16, 1.0, 1e-4);
  }
}

TEST(RmsNorm, HasOneWeightAndRejectsBadShapes) {
  const RmsNorm layer(0, Shape{3, 5});
  ASSERT_EQ(layer.param_specs().size(), 1u);
  EXPECT_EQ(layer.param_specs()[0].name, "weight");
  EXPECT_EQ(layer.param_specs()[0].shape, Shape({5}));
  EXPECT_THROW(RmsNorm(0, Shape{0}), InputError);
  EXPECT_THROW(RmsNorm(0, Shape{4}, 0.0), InputError);
}

TEST(RmsNorm, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  RmsNorm layer(1, Shape{4, 6});
  testing::expect_split_backward_bit_identical(
      layer, {random_tensor({3, 4, 6}, 2.0f, -0.5f), random_tensor({3, 4, 6})}, kernels);
}

TEST(RmsNorm, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  testing::SplitBackwardOf<RmsNorm> layer(0, Shape{4, 6});
  testing::expect_gradients_match(layer, random_tensor({3, 4, 6}, 2.0f, -0.5f), ctx);
}

}  // namespace
}  // namespace mpipe::nn
