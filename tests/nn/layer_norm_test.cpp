// Tests for the LayerNorm layer: gradients, normalization and shape checks.
#include "nn/layer_norm.h"

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
  Tensor t = testing::uniform_tensor(std::move(shape), CounterRng(21, RngPurpose::kData, 3, 0));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = offset + scale * t[i];
  return t;
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  LayerNorm layer(0, Shape{4, 6});
  testing::expect_gradients_match(layer, random_tensor({3, 4, 6}), ctx);
}

TEST(LayerNorm, ForwardConsumingKeepsTheInputItIsHanded) {
  kernels::KernelContext kernels;
  LayerNorm layer(1, Shape{4, 6});
  testing::expect_forward_consuming_keeps_input(layer, random_tensor({3, 4, 6}), kernels);
}

TEST(LayerNorm, DefaultParamsGiveRowsWithZeroMeanAndUnitVariance) {
  kernels::KernelContext kernels;
  LayerNorm layer(3, Shape{2, 16});
  Layer* layers[] = {&layer};
  ParamBuffer params(layers);
  params.initialize(1);
  const Tensor x = random_tensor({2, 2, 16}, 4.0f, 10.0f);
  const Tensor y = layer.forward(x, {.kernels = kernels, .training = false}).output;
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t row = 0; row < 4; ++row) {
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t j = 0; j < 16; ++j)
      sum += y[row * 16 + j], sum_sq += y[row * 16 + j] * y[row * 16 + j];
    EXPECT_NEAR(sum / 16, 0.0, 1e-5);
    EXPECT_NEAR(sum_sq / 16, 1.0, 1e-3);
  }
}

TEST(LayerNorm, ParamsAreWeightOnesAndBiasZerosOverTheLastAxis) {
  LayerNorm layer(0, Shape{5, 7});
  const auto specs = layer.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "weight");
  EXPECT_EQ(specs[0].shape, Shape({7}));
  EXPECT_EQ(specs[0].init, Init::kOnes);
  EXPECT_EQ(specs[1].name, "bias");
  EXPECT_EQ(specs[1].init, Init::kZeros);
  EXPECT_EQ(layer.output_shape(), Shape({5, 7}));
}

TEST(LayerNorm, RejectsAnEmptyLastAxisAndANonPositiveEps) {
  EXPECT_THROW(LayerNorm(0, Shape{4, 0}), InputError);
  EXPECT_THROW(LayerNorm(0, Shape{}), InputError);
  EXPECT_THROW(LayerNorm(0, Shape{4}, 0.0), InputError);
}

TEST(LayerNorm, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  LayerNorm layer(1, Shape{4, 6});
  testing::expect_split_backward_bit_identical(
      layer, {random_tensor({3, 4, 6}), random_tensor({3, 4, 6}, 2.0f, 0.5f)}, kernels);
}

TEST(LayerNorm, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  testing::SplitBackwardOf<LayerNorm> layer(0, Shape{4, 6});
  testing::expect_gradients_match(layer, random_tensor({3, 4, 6}), ctx);
}

}  // namespace
}  // namespace mpipe::nn
