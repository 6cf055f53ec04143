// Tests for the BatchNorm2d layer: gradients, micro-batch statistics, running statistics (updates
// from first forwards only, applied in order) and eval mode.
#include "nn/batch_norm2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "forward_consuming_check.h"
#include "gradient_check.h"
#include "split_backward_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(19, RngPurpose::kData, 5, stream));
}

// Storage for one BatchNorm2d's params, grads and buffers, bound on construction.
struct Bound {
  explicit Bound(BatchNorm2d& layer, int64_t channels)
      : weight(random_tensor({channels}, 40)),
        bias(random_tensor({channels}, 41)),
        weight_grad(Shape{channels}),
        bias_grad(Shape{channels}),
        running_mean(Shape{channels}),
        running_var(Shape{channels}) {
    running_var.fill(1.0f);
    for (int64_t c = 0; c < channels; ++c) weight[c] += 1.5f;
    layer.bind({weight.span(), bias.span()}, {weight_grad.span(), bias_grad.span()},
               {running_mean.span(), running_var.span()});
  }
  Tensor weight, bias, weight_grad, bias_grad, running_mean, running_var;
};

// Per-channel mean and unbiased variance of x: [batch, C, H, W], in double.
void channel_statistics(const Tensor& x, std::vector<double>& mean,
                        std::vector<double>& unbiased_var) {
  const int64_t n = x.dim(0), c_count = x.dim(1), plane = x.dim(2) * x.dim(3);
  mean.assign(static_cast<size_t>(c_count), 0.0);
  unbiased_var.assign(mean.size(), 0.0);
  const auto count = static_cast<double>(n * plane);
  for (int64_t c = 0; c < c_count; ++c) {
    double sum = 0.0, squares = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t i = 0; i < plane; ++i) sum += x[(b * c_count + c) * plane + i];
    }
    const double mu = sum / count;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t i = 0; i < plane; ++i) {
        const double d = x[(b * c_count + c) * plane + i] - mu;
        squares += d * d;
      }
    }
    mean[static_cast<size_t>(c)] = mu;
    unbiased_var[static_cast<size_t>(c)] = squares / (count - 1.0);
  }
}

TEST(BatchNorm2d, BackwardMatchesFiniteDifferencesInTraining) {
  kernels::KernelContext ctx;
  BatchNorm2d layer(0, Shape{3, 4, 3});
  Tensor x = random_tensor({2, 3, 4, 3}, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = 2.0f * x[i] + 0.5f;
  testing::expect_gradients_match(layer, x, ctx);
}

TEST(BatchNorm2d, ForwardConsumingKeepsTheInputItIsHanded) {
  kernels::KernelContext kernels;
  BatchNorm2d layer(1, Shape{3, 4, 3});
  testing::expect_forward_consuming_keeps_input(layer, random_tensor({2, 3, 4, 3}, 1), kernels);
}

TEST(BatchNorm2d, BackwardMatchesFiniteDifferencesForOnePixelImages) {
  kernels::KernelContext ctx;
  BatchNorm2d layer(1, Shape{4, 1, 1}, 0.1, 1e-3);
  testing::expect_gradients_match(layer, random_tensor({6, 4, 1, 1}, 2), ctx);
}

TEST(BatchNorm2d, TrainingNormalizesWithTheMicroBatchStatistics) {
  kernels::KernelContext ctx;
  BatchNorm2d layer(0, Shape{2, 3, 3});
  Bound bound(layer, 2);
  const Tensor x = random_tensor({3, 2, 3, 3}, 3);
  const Forward out = layer.forward(x, LayerContext{.kernels = ctx});
  std::vector<double> mean, var;
  channel_statistics(x, mean, var);
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t c = 0; c < 2; ++c) {
      for (int64_t i = 0; i < 9; ++i) {
        const int64_t at = (b * 2 + c) * 9 + i;
        const auto cu = static_cast<size_t>(c);
        const double biased = var[cu] * 26.0 / 27.0;
        const double expected =
            bound.weight[c] * (x[at] - mean[cu]) / std::sqrt(biased + 1e-5) + bound.bias[c];
        EXPECT_NEAR(out.output[at], expected, 1e-4) << at;
      }
    }
  }
  ASSERT_EQ(out.saved.tensors.size(), BatchNorm2d::kSavedTensors);
}

TEST(BatchNorm2d, FirstForwardReturnsAnUpdateThatMovesRunningStatisticsWithUnbiasedVariance) {
  kernels::KernelContext ctx;
  BatchNorm2d layer(0, Shape{3, 2, 2}, /*momentum=*/0.25);
  Bound bound(layer, 3);
  const Tensor x = random_tensor({4, 3, 2, 2}, 4);
  const Forward out =
      layer.forward(x, LayerContext{.kernels = ctx, .training = true, .recompute = false});
  ASSERT_EQ(std::ssize(out.buffer_update), layer.buffer_update_size());
  EXPECT_EQ(layer.buffer_update_size(), 2 * 3 + 1);
  // The forward itself leaves the running statistics alone.
  EXPECT_EQ(bound.running_mean[0], 0.0f);
  EXPECT_EQ(bound.running_var[0], 1.0f);
  layer.apply_buffer_update(out.buffer_update);
  std::vector<double> mean, var;
  channel_statistics(x, mean, var);
  for (int64_t c = 0; c < 3; ++c) {
    const auto cu = static_cast<size_t>(c);
    EXPECT_NEAR(bound.running_mean[c], 0.25 * mean[cu], 1e-6);
    EXPECT_NEAR(bound.running_var[c], 0.75 + 0.25 * var[cu], 1e-6);
  }
}

TEST(BatchNorm2d, RecomputeAndEvalReturnNoUpdateAndLeaveRunningStatisticsUnchanged) {
  kernels::KernelContext ctx;
  BatchNorm2d layer(0, Shape{3, 2, 2});
  Bound bound(layer, 3);
  const Tensor x = random_tensor({4, 3, 2, 2}, 5);
  const Forward first = layer.forward(x, LayerContext{.kernels = ctx, .recompute = false});
  EXPECT_FALSE(first.buffer_update.empty());
  layer.apply_buffer_update(first.buffer_update);
  const Tensor mean_after_first = bound.running_mean, var_after_first = bound.running_var;
  EXPECT_NE(mean_after_first[0], 0.0f);
  const Forward again = layer.forward(x, LayerContext{.kernels = ctx, .recompute = true});
  EXPECT_TRUE(again.buffer_update.empty());
  const Forward eval = layer.forward(x, LayerContext{.kernels = ctx, .training = false});
  EXPECT_TRUE(eval.buffer_update.empty());
  for (int64_t c = 0; c < 3; ++c) {
    EXPECT_EQ(bound.running_mean[c], mean_after_first[c]);
    EXPECT_EQ(bound.running_var[c], var_after_first[c]);
  }
  // A recompute still produces the same output and saved tensors as the first forward.
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(again.output[i], first.output[i]);
}

// Running statistics after applying the updates of forwards of `micro_batches`, in that order.
std::vector<float> statistics_after(const std::vector<Tensor>& micro_batches,
                                    const std::vector<size_t>& order) {
  kernels::KernelContext ctx;
  BatchNorm2d layer(0, Shape{2, 3, 3}, /*momentum=*/0.5);
  Bound bound(layer, 2);
  std::vector<std::vector<float>> updates;
  for (const Tensor& x : micro_batches) {
    updates.push_back(layer.forward(x, LayerContext{.kernels = ctx}).buffer_update);
  }
  for (size_t m : order) layer.apply_buffer_update(updates[m]);
  std::vector<float> stats(bound.running_mean.span().begin(), bound.running_mean.span().end());
  stats.insert(stats.end(), bound.running_var.span().begin(), bound.running_var.span().end());
  return stats;
}

TEST(BatchNorm2d, UpdatesAppliedInMicroBatchOrderFollowTheMomentumRecurrence) {
  const std::vector<Tensor> xs = {random_tensor({3, 2, 3, 3}, 7), random_tensor({3, 2, 3, 3}, 8),
                                  random_tensor({3, 2, 3, 3}, 9)};
  // What updating at each forward (PyTorch's way) gives: the recurrence over the micro-batches
  // in order, on each micro-batch's own statistics.
  double mean[2] = {0.0, 0.0}, var[2] = {1.0, 1.0};
  for (const Tensor& x : xs) {
    std::vector<double> m, v;
    channel_statistics(x, m, v);
    for (size_t c = 0; c < 2; ++c) {
      mean[c] = 0.5 * mean[c] + 0.5 * m[c];
      var[c] = 0.5 * var[c] + 0.5 * v[c];
    }
  }
  const std::vector<float> in_order = statistics_after(xs, {0, 1, 2});
  for (size_t c = 0; c < 2; ++c) {
    EXPECT_NEAR(in_order[c], mean[c], 1e-6) << c;
    EXPECT_NEAR(in_order[2 + c], var[c], 1e-6) << c;
  }
  // The order matters, so replicas must agree on it.
  EXPECT_NE(statistics_after(xs, {2, 1, 0}), in_order);
}

TEST(BatchNorm2d, EvalUsesRunningStatisticsAndSavesNothing) {
  kernels::KernelContext ctx;
  BatchNorm2d layer(0, Shape{2, 2, 2}, 0.1, 1e-5);
  Bound bound(layer, 2);
  bound.running_mean[0] = 0.5f, bound.running_mean[1] = -1.0f;
  bound.running_var[0] = 4.0f, bound.running_var[1] = 0.25f;
  const Tensor x = random_tensor({3, 2, 2, 2}, 6);
  const Forward out = layer.forward(x, LayerContext{.kernels = ctx, .training = false});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 4) % 2;
    const double expected =
        bound.weight[c] * (x[i] - bound.running_mean[c]) / std::sqrt(bound.running_var[c] + 1e-5) +
        bound.bias[c];
    EXPECT_NEAR(out.output[i], expected, 1e-5) << i;
  }
  EXPECT_TRUE(out.saved.tensors.empty());
  EXPECT_EQ(bound.running_mean[0], 0.5f);
  EXPECT_EQ(bound.running_var[1], 0.25f);
}

TEST(BatchNorm2d, ReportsSpecsInitsAndShape) {
  BatchNorm2d layer(3, Shape{5, 4, 4});
  EXPECT_EQ(layer.kind(), "batch_norm2d");
  EXPECT_EQ(layer.output_shape(), Shape({5, 4, 4}));
  const auto params = layer.param_specs();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].name, "weight");
  EXPECT_EQ(params[0].init, Init::kOnes);
  EXPECT_EQ(params[1].name, "bias");
  EXPECT_EQ(params[1].init, Init::kZeros);
  const auto buffers = layer.buffer_specs();
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[0].name, "running_mean");
  EXPECT_EQ(buffers[0].init, Init::kZeros);
  EXPECT_EQ(buffers[1].name, "running_var");
  EXPECT_EQ(buffers[1].init, Init::kOnes);
  EXPECT_EQ(buffers[1].shape, Shape({5}));
}

TEST(BatchNorm2d, RejectsAnUpdateOfTheWrongSize) {
  BatchNorm2d layer(0, Shape{2, 1, 1});
  Bound bound(layer, 2);
  const std::vector<float> update(4, 0.0f);
  EXPECT_THROW(layer.apply_buffer_update(update), Error);
}

TEST(BatchNorm2d, RejectsBadShapesAndSettings) {
  EXPECT_THROW(BatchNorm2d(0, Shape{5}), InputError);
  EXPECT_THROW(BatchNorm2d(0, Shape{5, 2, 2}, /*momentum=*/1.5), InputError);
  EXPECT_THROW(BatchNorm2d(0, Shape{5, 2, 2}, 0.1, /*eps=*/0.0), InputError);
  kernels::KernelContext ctx;
  BatchNorm2d layer(0, Shape{2, 1, 1});
  Bound bound(layer, 2);
  // One value per channel has no variance to normalize by.
  EXPECT_THROW(layer.forward(Tensor(Shape{1, 2, 1, 1}), LayerContext{.kernels = ctx}), Error);
}

TEST(BatchNorm2d, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  BatchNorm2d layer(1, Shape{3, 4, 3});
  testing::expect_split_backward_bit_identical(
      layer, {random_tensor({2, 3, 4, 3}, 2), random_tensor({2, 3, 4, 3}, 3)}, kernels);
}

TEST(BatchNorm2d, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  testing::SplitBackwardOf<BatchNorm2d> layer(0, Shape{3, 4, 3});
  Tensor x = random_tensor({2, 3, 4, 3}, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = 2.0f * x[i] + 0.5f;
  testing::expect_gradients_match(layer, x, ctx);
}

}  // namespace
}  // namespace mpipe::nn
