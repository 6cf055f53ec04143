// Tests for the Conv2d layer: finite-difference gradients, shapes, specs and input validation.
#include "nn/conv2d.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "forward_consuming_check.h"
#include "gradient_check.h"
#include "kernels/conv_reference.h"
#include "split_backward_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(17, RngPurpose::kData, 4, stream));
}

TEST(Conv2d, BackwardMatchesFiniteDifferencesWithPadding) {
  kernels::KernelContext ctx;
  Conv2d layer(0, Shape{3, 5, 5}, 4, 3, /*stride=*/1, /*padding=*/1);
  testing::expect_gradients_match(layer, random_tensor({2, 3, 5, 5}, 1), ctx);
}

TEST(Conv2d, ForwardConsumingKeepsTheInputItIsHanded) {
  kernels::KernelContext kernels;
  Conv2d layer(0, Shape{3, 5, 5}, 4, 3, /*stride=*/1, /*padding=*/1);
  testing::expect_forward_consuming_keeps_input(layer, random_tensor({2, 3, 5, 5}, 3), kernels);
}

TEST(Conv2d, BackwardMatchesFiniteDifferencesWithStrideTwo) {
  kernels::KernelContext ctx;
  Conv2d layer(1, Shape{2, 7, 6}, 3, 3, /*stride=*/2, /*padding=*/1);
  testing::expect_gradients_match(layer, random_tensor({2, 2, 7, 6}, 2), ctx);
}

TEST(Conv2d, BackwardMatchesFiniteDifferencesWithGroups) {
  kernels::KernelContext ctx;
  Conv2d layer(2, Shape{4, 5, 5}, 6, 3, 1, 1, 1, /*groups=*/2);
  testing::expect_gradients_match(layer, random_tensor({2, 4, 5, 5}, 3), ctx);
}

TEST(Conv2d, BackwardMatchesFiniteDifferencesDepthwise) {
  kernels::KernelContext ctx;
  Conv2d layer(3, Shape{3, 6, 6}, 3, 3, 2, 1, 1, /*groups=*/3, /*bias=*/false);
  testing::expect_gradients_match(layer, random_tensor({2, 3, 6, 6}, 4), ctx);
}

TEST(Conv2d, BackwardMatchesFiniteDifferencesWithDilation) {
  kernels::KernelContext ctx;
  Conv2d layer(4, Shape{2, 7, 7}, 2, 3, 1, /*padding=*/2, /*dilation=*/2);
  testing::expect_gradients_match(layer, random_tensor({2, 2, 7, 7}, 5), ctx);
}

TEST(Conv2d, BackwardMatchesFiniteDifferencesPointwiseWithoutBias) {
  kernels::KernelContext ctx;
  Conv2d layer(5, Shape{4, 3, 3}, 5, 1, 1, 0, 1, 1, /*bias=*/false);
  ASSERT_EQ(layer.param_specs().size(), 1u);
  testing::expect_gradients_match(layer, random_tensor({3, 4, 3, 3}, 6), ctx);
}

TEST(Conv2d, ForwardMatchesReferenceWithBoundParameters) {
  kernels::KernelContext ctx;
  Conv2d layer(0, Shape{4, 6, 5}, 6, 3, 2, 1, 1, 2);
  Tensor weight = random_tensor({6, 2, 3, 3}, 7), bias = random_tensor({6}, 8);
  Tensor weight_grad(weight.shape()), bias_grad(bias.shape());
  layer.bind({weight.span(), bias.span()}, {weight_grad.span(), bias_grad.span()}, {});
  const Tensor x = random_tensor({2, 4, 6, 5}, 9);
  const Forward out = layer.forward(x, LayerContext{.kernels = ctx});
  ASSERT_EQ(out.output.shape(), Shape({2, 6, 3, 3}));
  const kernels::Conv2dShape s{.batch = 2,
                               .in_channels = 4,
                               .height = 6,
                               .width = 5,
                               .out_channels = 6,
                               .kernel_h = 3,
                               .kernel_w = 3,
                               .stride_h = 2,
                               .stride_w = 2,
                               .pad_h = 1,
                               .pad_w = 1,
                               .groups = 2};
  Tensor expected(out.output.shape());
  kernels::reference::conv2d_forward(s, x.data(), weight.data(), bias.data(), expected.data());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    EXPECT_NEAR(out.output[i], expected[i], 1e-5) << i;
  }
}

TEST(Conv2d, ReportsOutputShapeParamsAndFlops) {
  Conv2d layer(7, Shape{4, 9, 8}, 6, 3, /*stride=*/2, /*padding=*/1, /*dilation=*/1,
               /*groups=*/2);
  EXPECT_EQ(layer.kind(), "conv2d");
  EXPECT_EQ(layer.output_shape(), Shape({6, 5, 4}));
  const auto specs = layer.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "weight");
  EXPECT_EQ(specs[0].shape, Shape({6, 2, 3, 3}));
  EXPECT_EQ(specs[0].init, Init::kKaimingUniform);
  EXPECT_EQ(specs[0].fan_in, 2 * 3 * 3);
  EXPECT_EQ(specs[1].name, "bias");
  EXPECT_EQ(specs[1].shape, Shape({6}));
  EXPECT_TRUE(layer.buffer_specs().empty());
  EXPECT_DOUBLE_EQ(layer.forward_flops_per_example(), 6.0 * 5 * 4 * (2.0 * 18 + 1));
}

TEST(Conv2d, DilationWidensTheKernel) {
  Conv2d layer(0, Shape{1, 9, 9}, 1, 3, 1, 0, /*dilation=*/3);
  EXPECT_EQ(layer.output_shape(), Shape({1, 3, 3}));
}

TEST(Conv2d, RejectsChannelsNotDivisibleByGroups) {
  try {
    Conv2d layer(0, Shape{3, 8, 8}, 4, 3, 1, 1, 1, /*groups=*/2);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "conv2d: input has 3 channels, not divisible by groups 2");
  }
  EXPECT_THROW(Conv2d(0, Shape{4, 8, 8}, 3, 3, 1, 1, 1, 2), InputError);
}

TEST(Conv2d, RejectsBadInputShapeAndKernelThatDoesNotFit) {
  EXPECT_THROW(Conv2d(0, Shape{8, 8}, 4, 3), InputError);
  EXPECT_THROW(Conv2d(0, Shape{2, 2, 2}, 4, 3), InputError);
  EXPECT_THROW(Conv2d(0, Shape{2, 5, 5}, 4, 3, 1, 0, /*dilation=*/3), InputError);
  EXPECT_THROW(Conv2d(0, Shape{2, 5, 5}, 0, 3), InputError);
  EXPECT_THROW(Conv2d(0, Shape{2, 5, 5}, 4, 3, /*stride=*/0), InputError);
  EXPECT_NO_THROW(Conv2d(0, Shape{2, 2, 2}, 4, 3, 1, /*padding=*/1));
}

TEST(Conv2d, AccumulatesWeightGradientsAndSkipsInputGradientWhenNotNeeded) {
  kernels::KernelContext ctx;
  Conv2d layer(0, Shape{2, 4, 4}, 3, 3, 1, 1);
  Tensor weight = random_tensor({3, 2, 3, 3}, 10), bias = random_tensor({3}, 11);
  Tensor weight_grad(weight.shape()), bias_grad(bias.shape());
  layer.bind({weight.span(), bias.span()}, {weight_grad.span(), bias_grad.span()}, {});
  LayerContext lctx{.kernels = ctx, .need_input_grad = false};
  const Tensor x = random_tensor({2, 2, 4, 4}, 12), dy = random_tensor({2, 3, 4, 4}, 13);
  const Forward out = layer.forward(x, lctx);
  EXPECT_TRUE(layer.backward(dy, out.saved, lctx).empty());
  const Tensor once = weight_grad, bias_once = bias_grad;
  layer.backward(dy, out.saved, lctx);
  for (int64_t i = 0; i < weight_grad.numel(); ++i) {
    EXPECT_NEAR(weight_grad[i], 2.0f * once[i], 1e-5) << i;
  }
  EXPECT_NEAR(bias_grad[0], 2.0f * bias_once[0], 1e-5);
  EXPECT_NE(bias_once[0], 0.0f);
}

TEST(Conv2d, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  Conv2d layer(1, Shape{3, 5, 5}, 4, 3, /*stride=*/1, /*padding=*/1);
  testing::expect_split_backward_bit_identical(
      layer, {random_tensor({2, 3, 5, 5}, 4), random_tensor({2, 3, 5, 5}, 5)}, kernels);
}

TEST(Conv2d, SplitBackwardWithoutInputGradientGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  Conv2d layer(0, Shape{2, 6, 6}, 4, 3, /*stride=*/2, /*padding=*/1, /*dilation=*/1,
               /*groups=*/2);
  testing::expect_split_backward_bit_identical(
      layer, {random_tensor({2, 2, 6, 6}, 6), random_tensor({2, 2, 6, 6}, 7)}, kernels,
      /*need_input_grad=*/false);
}

TEST(Conv2d, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  testing::SplitBackwardOf<Conv2d> layer(1, Shape{2, 7, 6}, 3, 3, /*stride=*/2, /*padding=*/1);
  testing::expect_gradients_match(layer, random_tensor({2, 2, 7, 6}, 2), ctx);
}

}  // namespace
}  // namespace mpipe::nn
