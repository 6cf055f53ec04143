// Tests for Dropout: gradients with a fixed mask, and a mask that depends only on
// (seed, step, global example, layer, element).
#include "nn/dropout.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape) {
  return testing::uniform_tensor(std::move(shape), CounterRng(9, RngPurpose::kData, 2, 0));
}

LayerContext context(kernels::KernelContext& kernels, int64_t step, int64_t first_example) {
  return LayerContext{.kernels = kernels, .seed = 42, .step = step, .first_example = first_example};
}

TEST(Dropout, BackwardMatchesFiniteDifferencesWithTheMaskFixed) {
  kernels::KernelContext ctx;
  Dropout layer(0, Shape{4, 5}, 0.3);
  testing::expect_gradients_match(layer, random_tensor({3, 4, 5}), ctx);
}

TEST(Dropout, MaskIsTheSameWhateverTheMicroBatchSplit) {
  kernels::KernelContext kernels;
  Dropout layer(2, Shape{50}, 0.5);
  const Tensor x = random_tensor({8, 50});
  const Tensor whole = layer.forward(x, context(kernels, 3, 0)).output;
  const Tensor tail = layer.forward(x.slice_rows(4, 4), context(kernels, 3, 4)).output;
  for (int64_t i = 0; i < tail.numel(); ++i) ASSERT_EQ(tail[i], whole[4 * 50 + i]);
}

TEST(Dropout, RecomputeReproducesTheMaskAndBackwardUsesIt) {
  kernels::KernelContext kernels;
  Dropout layer(1, Shape{64}, 0.5);
  const Tensor x = random_tensor({2, 64});
  LayerContext ctx = context(kernels, 1, 6);
  const Forward first = layer.forward(x, ctx);
  ctx.recompute = true;
  const Forward again = layer.forward(x, ctx);
  Tensor ones(x.shape());
  ones.fill(1.0f);
  const Tensor dx = layer.backward(ones, again.saved, ctx);
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(first.output[i], again.output[i]);
    ASSERT_EQ(dx[i] == 0.0f, first.output[i] == 0.0f) << i;
  }
}

TEST(Dropout, MaskChangesWithStepAndLayer) {
  kernels::KernelContext kernels;
  Dropout layer(0, Shape{256}, 0.5), other_layer(1, Shape{256}, 0.5);
  Tensor ones(Shape{1, 256});
  ones.fill(1.0f);
  const Tensor base = layer.forward(ones, context(kernels, 0, 0)).output;
  const Tensor next_step = layer.forward(ones, context(kernels, 1, 0)).output;
  const Tensor next_layer = other_layer.forward(ones, context(kernels, 0, 0)).output;
  int step_differs = 0, layer_differs = 0;
  for (int64_t i = 0; i < 256; ++i) {
    step_differs += base[i] != next_step[i];
    layer_differs += base[i] != next_layer[i];
  }
  EXPECT_GT(step_differs, 64);
  EXPECT_GT(layer_differs, 64);
}

TEST(Dropout, KeepsAboutOneMinusRateAndScalesKeptValues) {
  kernels::KernelContext kernels;
  Dropout layer(0, Shape{10000}, 0.25);
  Tensor ones(Shape{1, 10000});
  ones.fill(1.0f);
  const Tensor y = layer.forward(ones, context(kernels, 0, 0)).output;
  int kept = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    if (y[i] != 0.0f) {
      ++kept;
      ASSERT_FLOAT_EQ(y[i], 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(kept / 10000.0, 0.75, 0.02);
}

TEST(Dropout, IsTheIdentityInEvaluation) {
  kernels::KernelContext kernels;
  Dropout layer(0, Shape{32}, 0.9);
  const Tensor x = random_tensor({2, 32});
  LayerContext ctx = context(kernels, 0, 0);
  ctx.training = false;
  const Tensor y = layer.forward(x, ctx).output;
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y[i], x[i]);
}

TEST(Dropout, RejectsRatesOutsideZeroToOne) {
  EXPECT_THROW(Dropout(0, Shape{4}, 1.0), InputError);
  EXPECT_THROW(Dropout(0, Shape{4}, -0.1), InputError);
}

}  // namespace
}  // namespace mpipe::nn
