// Tests for the losses: values, gradients against finite differences, and input checks.
#include "nn/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(8, RngPurpose::kData, 2, stream));
}

// Compares grad with central differences of grad_scale * sum over sampled output elements.
void expect_loss_gradient_matches(const Loss& loss, const Tensor& output, const Tensor& targets) {
  kernels::KernelContext kernels;
  const float scale = 0.5f;
  const LossOutput analytic = loss.compute(kernels, output, targets, scale, true);
  ASSERT_EQ(analytic.grad.shape(), output.shape());
  Tensor perturbed = output;
  const double eps = 1e-2;
  for (int64_t i = 0; i < output.numel(); ++i) {
    const float original = perturbed[i];
    perturbed[i] = static_cast<float>(original + eps);
    const double plus = loss.compute(kernels, perturbed, targets, scale, false).sum;
    perturbed[i] = static_cast<float>(original - eps);
    const double minus = loss.compute(kernels, perturbed, targets, scale, false).sum;
    perturbed[i] = original;
    const double numeric = scale * (plus - minus) / (2 * eps);
    EXPECT_NEAR(analytic.grad[i], numeric, 1e-3 * (1.0 + std::abs(numeric))) << "element " << i;
  }
}

TEST(CrossEntropyLoss, GradientMatchesFiniteDifferencesForSequences) {
  const auto loss = make_loss("cross_entropy");
  const Tensor targets(Shape{2, 3}, std::vector<float>{0, 4, 2, 1, 1, 3});
  expect_loss_gradient_matches(*loss, random_tensor({2, 3, 5}, 1), targets);
}

// Label smoothing and padding (target 4 here): the finite differences of the smoothed loss, with
// the padded rows contributing nothing.
TEST(CrossEntropyLoss, SmoothedAndPaddedGradientMatchesFiniteDifferences) {
  const auto loss = make_loss("cross_entropy", {.label_smoothing = 0.1, .ignore_target = 4});
  const Tensor targets(Shape{2, 3}, std::vector<float>{0, 4, 2, 1, 4, 3});
  expect_loss_gradient_matches(*loss, random_tensor({2, 3, 5}, 2), targets);
}

TEST(CrossEntropyLoss, PaddedTargetsAreNotRows) {
  kernels::KernelContext kernels;
  const auto loss = make_loss("cross_entropy", {.ignore_target = 0});
  const Tensor targets(Shape{2, 3}, std::vector<float>{5, 0, 0, 1, 2, 0});
  const LossOutput out = loss->compute(kernels, Tensor(Shape{2, 3, 10}), targets, 1.0f, true);
  EXPECT_EQ(out.rows, 3);
  EXPECT_NEAR(out.sum, 3 * std::log(10.0), 1e-4);
  for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(out.grad[10 + c], 0.0f);  // row 1 is padding
}

TEST(CrossEntropyLoss, OfUniformLogitsIsLogClassesPerRowAndCountsCorrectRows) {
  kernels::KernelContext kernels;
  const auto loss = make_loss("cross_entropy");
  EXPECT_EQ(loss->kind(), "cross_entropy");
  const Tensor uniform(Shape{4, 10});
  const Tensor targets(Shape{4}, std::vector<float>{0, 1, 2, 3});
  const LossOutput out = loss->compute(kernels, uniform, targets, 1.0f, false);
  EXPECT_EQ(out.rows, 4);
  EXPECT_NEAR(out.sum, 4 * std::log(10.0), 1e-4);
  EXPECT_TRUE(out.grad.empty());

  Tensor peaked(Shape{2, 3});
  peaked[2] = 5.0f;  // row 0 predicts class 2
  peaked[3] = 5.0f;  // row 1 predicts class 0
  const Tensor labels(Shape{2}, std::vector<float>{2, 1});
  EXPECT_EQ(loss->compute(kernels, peaked, labels, 1.0f, false).correct, 1);
}

TEST(CrossEntropyLoss, RejectsTargetsOfTheWrongShape) {
  kernels::KernelContext kernels;
  const auto loss = make_loss("cross_entropy");
  EXPECT_THROW(loss->compute(kernels, Tensor(Shape{4, 10}), Tensor(Shape{4, 10}), 1.0f, true),
               InputError);
  EXPECT_THROW(loss->compute(kernels, Tensor(Shape{4, 10}), Tensor(Shape{3}), 1.0f, true),
               InputError);
}

TEST(MseLoss, GradientMatchesFiniteDifferences) {
  const auto loss = make_loss("mse");
  expect_loss_gradient_matches(*loss, random_tensor({3, 4}, 2), random_tensor({3, 4}, 3));
}

TEST(MseLoss, SumsSquaredDifferencesWithOneRowPerExample) {
  kernels::KernelContext kernels;
  const auto loss = make_loss("mse");
  EXPECT_EQ(loss->kind(), "mse");
  const Tensor y(Shape{2, 2}, std::vector<float>{1, 2, 3, 4});
  const Tensor t(Shape{2, 2}, std::vector<float>{0, 2, 3, 1});
  const LossOutput out = loss->compute(kernels, y, t, 0.25f, true);
  EXPECT_EQ(out.rows, 2);
  EXPECT_DOUBLE_EQ(out.sum, 1.0 + 9.0);
  EXPECT_FLOAT_EQ(out.grad[0], 0.5f);
  EXPECT_FLOAT_EQ(out.grad[3], 1.5f);
  EXPECT_THROW(loss->compute(kernels, y, Tensor(Shape{2}), 1.0f, true), InputError);
  const Tensor column(Shape{2, 1}, std::vector<float>{1, 2});
  EXPECT_DOUBLE_EQ(loss->compute(kernels, column, Tensor(Shape{2}), 1.0f, false).sum, 5.0);
}

// The memory model counts what training_tensor_bytes states beside the output: the gradient
// compute returns and the targets it takes, per example.
TEST(Loss, TrainingTensorBytesAreTheGradientAndTheTargetsPerExample) {
  kernels::KernelContext kernels;
  const auto bytes = [](const Tensor& t, int64_t rows) {
    return static_cast<double>(t.numel()) * sizeof(float) / static_cast<double>(rows);
  };
  const auto cross_entropy = make_loss("cross_entropy");
  const Tensor logits = random_tensor({2, 3, 5}, 2);
  const Tensor classes(Shape{2, 3}, std::vector<float>{0, 4, 2, 1, 1, 3});
  EXPECT_EQ(cross_entropy->training_tensor_bytes(Shape{3, 5}),
            (std::vector<double>{
                bytes(cross_entropy->compute(kernels, logits, classes, 1.0f, true).grad, 2),
                bytes(classes, 2)}));
  const auto mse = make_loss("mse");
  const Tensor y = random_tensor({2, 4}, 3);
  const Tensor t = random_tensor({2, 4}, 4);
  EXPECT_EQ(
      mse->training_tensor_bytes(Shape{4}),
      (std::vector<double>{bytes(mse->compute(kernels, y, t, 1.0f, true).grad, 2), bytes(t, 2)}));
}

TEST(Loss, UnknownKindIsAnInputError) { EXPECT_THROW(make_loss("hinge"), InputError); }

}  // namespace
}  // namespace mpipe::nn
