// Tests for the pooling layers: finite-difference gradients, shapes and saved workspace.
#include "nn/pooling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(23, RngPurpose::kData, 6, stream));
}

// Values 0.1 apart in a shuffled order: no two elements of a window within twice the
// finite-difference step of each other, so no maximum changes place under perturbation.
Tensor distinct_tensor(Shape shape, uint64_t stream) {
  Tensor t(std::move(shape));
  std::vector<int64_t> order(static_cast<size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  const CounterRng rng(29, RngPurpose::kShuffle, 6, stream);
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.bits(i) % i]);
  }
  for (int64_t i = 0; i < t.numel(); ++i) {
    t[i] = 0.1f * static_cast<float>(order[static_cast<size_t>(i)]) - 0.05f * t.numel();
  }
  return t;
}

TEST(MaxPool2d, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  MaxPool2d layer(0, Shape{2, 6, 6}, 2, 2);
  testing::expect_gradients_match(layer, distinct_tensor({2, 2, 6, 6}, 1), ctx);
}

TEST(MaxPool2d, BackwardMatchesFiniteDifferencesWithOverlapAndPadding) {
  kernels::KernelContext ctx;
  MaxPool2d layer(0, Shape{2, 7, 5}, 3, 2, 1);
  testing::expect_gradients_match(layer, distinct_tensor({2, 2, 7, 5}, 2), ctx);
}

TEST(AvgPool2d, BackwardMatchesFiniteDifferencesIncludingPadding) {
  kernels::KernelContext ctx;
  AvgPool2d layer(0, Shape{3, 5, 5}, 3, 2, 1);
  testing::expect_gradients_match(layer, random_tensor({2, 3, 5, 5}, 3), ctx);
}

TEST(AvgPool2d, BackwardMatchesFiniteDifferencesExcludingPadding) {
  kernels::KernelContext ctx;
  AvgPool2d layer(0, Shape{2, 6, 5}, 3, 1, 1, /*count_include_pad=*/false);
  testing::expect_gradients_match(layer, random_tensor({2, 2, 6, 5}, 4), ctx);
}

TEST(GlobalAvgPool, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  GlobalAvgPool layer(0, Shape{3, 4, 5});
  testing::expect_gradients_match(layer, random_tensor({2, 3, 4, 5}, 5), ctx);
}

TEST(GlobalAvgPool, OutputsTheMeanOfEachChannel) {
  kernels::KernelContext ctx;
  GlobalAvgPool layer(0, Shape{3, 2, 3});
  EXPECT_EQ(layer.kind(), "global_avg_pool");
  EXPECT_EQ(layer.output_shape(), Shape({3}));
  const Tensor x = random_tensor({2, 3, 2, 3}, 6);
  const Forward out = layer.forward(x, LayerContext{.kernels = ctx});
  ASSERT_EQ(out.output.shape(), Shape({2, 3}));
  for (int64_t row = 0; row < 6; ++row) {
    double sum = 0.0;
    for (int64_t i = 0; i < 6; ++i) sum += x[row * 6 + i];
    EXPECT_NEAR(out.output[row], sum / 6.0, 1e-6) << row;
  }
}

TEST(MaxPool2d, OutputsWindowMaximaAndSavesTheWorkspaceOnlyWhenTraining) {
  kernels::KernelContext ctx;
  MaxPool2d layer(0, Shape{1, 4, 4}, 2, 2);
  EXPECT_EQ(layer.kind(), "max_pool2d");
  EXPECT_EQ(layer.output_shape(), Shape({1, 2, 2}));
  std::vector<float> values(16);
  std::iota(values.begin(), values.end(), 0.0f);
  const Tensor x(Shape{1, 1, 4, 4}, values);
  const Forward training = layer.forward(x, LayerContext{.kernels = ctx});
  EXPECT_EQ(training.saved.tensors.size(), 1u);
  const Forward eval = layer.forward(x, LayerContext{.kernels = ctx, .training = false});
  EXPECT_TRUE(eval.saved.tensors.empty());
  const std::vector<float> expected{5, 7, 13, 15};
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(training.output[i], expected[static_cast<size_t>(i)]);
    EXPECT_EQ(eval.output[i], expected[static_cast<size_t>(i)]);
  }
  EXPECT_THROW(layer.backward(training.output, eval.saved, LayerContext{.kernels = ctx}), Error);
}

TEST(Pool2d, ReportsOutputShapesAndRejectsBadSettings) {
  EXPECT_EQ(MaxPool2d(0, Shape{3, 7, 7}, 3, 2, 1).output_shape(), Shape({3, 4, 4}));
  EXPECT_EQ(AvgPool2d(0, Shape{3, 7, 6}, 2, 2).output_shape(), Shape({3, 3, 3}));
  EXPECT_EQ(AvgPool2d(0, Shape{3, 7, 6}, 2, 2).kind(), "avg_pool2d");
  EXPECT_THROW(MaxPool2d(0, Shape{3, 7}, 2, 2), InputError);
  EXPECT_THROW(MaxPool2d(0, Shape{3, 7, 7}, 2, 2, /*padding=*/2), InputError);
  EXPECT_THROW(MaxPool2d(0, Shape{3, 2, 2}, 3, 1), InputError);
  EXPECT_THROW(AvgPool2d(0, Shape{3, 4, 4}, 2, /*stride=*/0), InputError);
  EXPECT_THROW(GlobalAvgPool(0, Shape{3}), InputError);
}

}  // namespace
}  // namespace mpipe::nn
