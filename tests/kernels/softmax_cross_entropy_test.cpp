// Tests for the fused softmax + cross-entropy kernel against the naive reference.
#include "kernels/softmax_cross_entropy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::random_values;

std::vector<float> random_targets(int64_t rows, int64_t classes) {
  std::vector<float> targets = random_values(rows, 99, 0.0f, static_cast<float>(classes));
  for (float& t : targets) t = std::floor(t);
  return targets;
}

TEST(SoftmaxCrossEntropy, MatchesReference) {
  KernelContext ctx;
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{1, 1}, {7, 10}, {33, 129}}) {
    const auto logits = random_values(rows * classes, 1, -4.0f, 4.0f);
    const auto targets = random_targets(rows, classes);
    std::vector<float> grad(logits.size()), expected_grad(logits.size());
    const auto result = softmax_cross_entropy(ctx, logits.data(), targets.data(), rows, classes,
                                              0.25f, grad.data());
    const auto expected = reference::softmax_cross_entropy(logits.data(), targets.data(), rows,
                                                           classes, 0.25f, expected_grad.data());
    EXPECT_NEAR(result.loss_sum, expected.loss_sum, 1e-5 * rows);
    EXPECT_EQ(result.correct, expected.correct);
    for (size_t i = 0; i < grad.size(); ++i) ASSERT_NEAR(grad[i], expected_grad[i], 1e-6f);
  }
}

// Label smoothing and padded rows: the same against the reference, which computes -Σ q·log p
// with the smoothed target distribution q directly.
TEST(SoftmaxCrossEntropy, SmoothedAndIgnoringMatchesReference) {
  KernelContext ctx;
  const int64_t rows = 9, classes = 17;
  const auto logits = random_values(rows * classes, 4, -4.0f, 4.0f);
  auto targets = random_targets(rows, classes);
  targets[2] = targets[7] = 16.0f;  // padding
  targets[4] = 3.0f;
  for (const CrossEntropyOptions options :
       {CrossEntropyOptions{.label_smoothing = 0.1}, CrossEntropyOptions{.ignore_target = 16},
        CrossEntropyOptions{.label_smoothing = 0.2, .ignore_target = 16}}) {
    std::vector<float> grad(logits.size(), 7.0f), expected_grad(logits.size());
    const auto result = softmax_cross_entropy(ctx, logits.data(), targets.data(), rows, classes,
                                              0.5f, grad.data(), options);
    const auto expected = reference::softmax_cross_entropy(
        logits.data(), targets.data(), rows, classes, 0.5f, expected_grad.data(), options);
    const int64_t counted = options.ignore_target ? rows - 2 : rows;
    EXPECT_EQ(result.counted, counted);
    EXPECT_EQ(expected.counted, counted);
    EXPECT_NEAR(result.loss_sum, expected.loss_sum, 1e-5 * rows);
    EXPECT_EQ(result.correct, expected.correct);
    // (The float log-softmax's rounding, a few 1e-7 in each log-probability, reaches the gradient.)
    for (size_t i = 0; i < grad.size(); ++i) ASSERT_NEAR(grad[i], expected_grad[i], 4e-6f) << i;
    if (options.ignore_target) {
      for (int64_t c = 0; c < classes; ++c) EXPECT_EQ(grad[2 * classes + c], 0.0f);
    }
  }
}

// Smoothing moves the loss's minimum: with ε = 0.3 over 3 classes, logits giving p = (0.8, 0.1,
// 0.1) at target 0 are exactly the target distribution, so the gradient is zero.
TEST(SoftmaxCrossEntropy, SmoothedGradientVanishesAtTheTargetDistribution) {
  KernelContext ctx;
  const std::vector<float> logits = {std::log(0.8f), std::log(0.1f), std::log(0.1f)};
  const std::vector<float> targets = {0.0f};
  std::vector<float> grad(3);
  const auto result = softmax_cross_entropy(ctx, logits.data(), targets.data(), 1, 3, 1.0f,
                                            grad.data(), {.label_smoothing = 0.3});
  for (float g : grad) EXPECT_NEAR(g, 0.0f, 1e-5f);  // (to the logits' rounding to floats)
  // The loss is then the entropy of q: -(0.8 log 0.8 + 2 · 0.1 log 0.1) (to the rounding of the
  // logits to floats).
  EXPECT_NEAR(result.loss_sum, -(0.8 * std::log(0.8) + 0.2 * std::log(0.1)), 1e-5);
}

TEST(SoftmaxCrossEntropy, IsStableForHugeLogits) {
  KernelContext ctx;
  const std::vector<float> logits = {1000.0f, 0.0f, -1000.0f, 1e30f, 1e30f, -1e30f};
  const std::vector<float> targets = {1.0f, 0.0f};
  std::vector<float> grad(6);
  const auto result =
      softmax_cross_entropy(ctx, logits.data(), targets.data(), 2, 3, 1.0f, grad.data());
  EXPECT_TRUE(std::isfinite(result.loss_sum));
  EXPECT_NEAR(result.loss_sum, 1000.0 + std::log(2.0), 1e-3);
  for (float g : grad) EXPECT_TRUE(std::isfinite(g));
  EXPECT_NEAR(grad[3], -0.5f, 1e-6f);
  EXPECT_EQ(result.correct, 1);  // row 1: first maximum is class 0
}

TEST(SoftmaxCrossEntropy, GradientRowsSumToZeroAndLossNeedsNoGradBuffer) {
  KernelContext ctx;
  const int64_t rows = 5, classes = 6;
  const auto logits = random_values(rows * classes, 3);
  const auto targets = random_targets(rows, classes);
  std::vector<float> grad(logits.size());
  const auto with_grad =
      softmax_cross_entropy(ctx, logits.data(), targets.data(), rows, classes, 1.0f, grad.data());
  const auto without =
      softmax_cross_entropy(ctx, logits.data(), targets.data(), rows, classes, 1.0f, nullptr);
  EXPECT_EQ(with_grad.loss_sum, without.loss_sum);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += grad[r * classes + c];
    EXPECT_NEAR(sum, 0.0, 1e-5);
  }
}

// The same rows placed 0 to 15 floats further on (every alignment of a row's start to the vector
// width) give every gradient element the same bits and the same loss: a row's result depends on
// its values alone, not on where it starts or on how many rows a micro-batch has (bit-identity
// across K).
TEST(SoftmaxCrossEntropy, GivesEveryElementTheSameBitsAtAnyAddress) {
  KernelContext ctx;
  const int64_t rows = 5, classes = 37;
  const auto values = random_values(rows * classes, 6, -8.0f, 8.0f);
  const auto targets = random_targets(rows, classes);
  std::vector<float> first_grad;
  double first_loss = 0.0;
  for (int64_t shift = 0; shift < 16; ++shift) {
    std::vector<float> logits(shift + values.size()), grad(logits.size());
    std::copy(values.begin(), values.end(), logits.begin() + shift);
    const auto result = softmax_cross_entropy(ctx, logits.data() + shift, targets.data(), rows,
                                              classes, 0.5f, grad.data() + shift);
    grad.erase(grad.begin(), grad.begin() + shift);
    if (shift == 0) {
      first_grad = grad;
      first_loss = result.loss_sum;
      continue;
    }
    EXPECT_EQ(std::bit_cast<uint64_t>(result.loss_sum), std::bit_cast<uint64_t>(first_loss))
        << "shifted by " << shift;
    for (size_t i = 0; i < grad.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(grad[i]), std::bit_cast<uint32_t>(first_grad[i]))
          << "grad[" << i << "] shifted by " << shift;
    }
  }
}

TEST(SoftmaxCrossEntropy, RejectsTargetsThatAreNotClassIndices) {
  KernelContext ctx;
  const std::vector<float> logits(6, 0.0f);
  for (float bad : {3.0f, -1.0f, 0.5f}) {
    const std::vector<float> targets = {0.0f, bad};
    EXPECT_THROW(softmax_cross_entropy(ctx, logits.data(), targets.data(), 2, 3, 1.0f, nullptr),
                 InputError);
  }
}

}  // namespace
}  // namespace mpipe::kernels
