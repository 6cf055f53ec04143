// Tests for the Linear layer: gradients, shapes, reference agreement and accumulation.
#include "nn/linear.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "kernels/reference.h"
#include "nn/param_buffer.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(11, RngPurpose::kData, 3, stream));
}

LayerContext training_context(kernels::KernelContext& kernels) {
  return LayerContext{.kernels = kernels};
}

TEST(Linear, BackwardMatchesFiniteDifferencesFor2DInput) {
  kernels::KernelContext ctx;
  Linear layer(0, Shape{5}, 4);
  testing::expect_gradients_match(layer, random_tensor({3, 5}, 1), ctx);
}

TEST(Linear, BackwardMatchesFiniteDifferencesFor3DInput) {
  kernels::KernelContext ctx;
  Linear layer(2, Shape{3, 6}, 4);
  testing::expect_gradients_match(layer, random_tensor({2, 3, 6}, 2), ctx);
}

TEST(Linear, BackwardMatchesFiniteDifferencesWithoutBias) {
  kernels::KernelContext ctx;
  Linear layer(0, Shape{7}, 3, /*bias=*/false);
  ASSERT_EQ(layer.param_specs().size(), 1u);
  testing::expect_gradients_match(layer, random_tensor({4, 7}, 3), ctx);
}

TEST(Linear, ReportsOutputShapeParamsAndFlops) {
  Linear layer(4, Shape{10, 32}, 8);
  EXPECT_EQ(layer.kind(), "linear");
  EXPECT_EQ(layer.output_shape(), Shape({10, 8}));
  const auto specs = layer.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "weight");
  EXPECT_EQ(specs[0].shape, Shape({8, 32}));
  EXPECT_EQ(specs[0].init, Init::kKaimingUniform);
  EXPECT_EQ(specs[0].fan_in, 32);
  EXPECT_EQ(specs[1].name, "bias");
  EXPECT_EQ(specs[1].shape, Shape({8}));
  EXPECT_DOUBLE_EQ(layer.forward_flops_per_example(), 10.0 * (2.0 * 32 * 8 + 8));
}

TEST(Linear, RejectsEmptyInputsAndZeroUnits) {
  EXPECT_THROW(Linear(0, Shape{}, 4), InputError);
  EXPECT_THROW(Linear(0, Shape{0}, 4), InputError);
  EXPECT_THROW(Linear(0, Shape{4}, 0), InputError);
}

TEST(Linear, ForwardMatchesReferenceOnInitializedParams) {
  kernels::KernelContext kernels;
  Linear layer(1, Shape{9}, 5);
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  buffer.initialize(3);
  // Non-zero bias so it is tested too.
  const int64_t bias = buffer.entries()[1].offset;
  for (int64_t i = 0; i < 5; ++i) buffer.values()[static_cast<size_t>(bias + i)] = 0.1f * i;
  const Tensor x = random_tensor({6, 9}, 4);
  const Forward forward = layer.forward(x, training_context(kernels));
  std::vector<float> expected(30);
  kernels::reference::linear_forward(x.data(), buffer.values().data(),
                                     buffer.values().data() + bias, expected.data(), 6, 9, 5);
  ASSERT_EQ(forward.output.shape(), Shape({6, 5}));
  for (int64_t i = 0; i < 30; ++i) EXPECT_NEAR(forward.output[i], expected[i], 1e-5f);
}

TEST(Linear, BackwardAccumulatesParameterGradientsAndCanSkipInputGradient) {
  kernels::KernelContext kernels;
  Linear layer(0, Shape{4}, 3);
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  buffer.initialize(5);
  LayerContext ctx = training_context(kernels);
  const Tensor x = random_tensor({2, 4}, 5), dy = random_tensor({2, 3}, 6);
  const Forward forward = layer.forward(x, ctx);
  ASSERT_FALSE(layer.backward(dy, forward.saved, ctx).empty());
  const std::vector<float> once(buffer.grads().begin(), buffer.grads().end());
  ctx.need_input_grad = false;
  EXPECT_TRUE(layer.backward(dy, forward.saved, ctx).empty());
  for (size_t i = 0; i < once.size(); ++i) EXPECT_FLOAT_EQ(buffer.grads()[i], 2.0f * once[i]);
}

TEST(Linear, SavesNothingInEvaluation) {
  kernels::KernelContext kernels;
  Linear layer(0, Shape{4}, 3);
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  LayerContext ctx = training_context(kernels);
  ctx.training = false;
  EXPECT_EQ(layer.forward(random_tensor({2, 4}, 1), ctx).saved.bytes(), 0u);
}

}  // namespace
}  // namespace mpipe::nn
