// Tests for the Activation layer: gradients of ReLU, GELU and tanh, shapes and names.
#include "nn/activation.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "forward_consuming_check.h"
#include "gradient_check.h"

namespace mpipe::nn {
namespace {

// Values in [-2, -0.1] ∪ [0.1, 2]: away from ReLU's kink so finite differences are exact.
Tensor away_from_zero(Shape shape) {
  Tensor t(std::move(shape));
  const CounterRng rng(5, RngPurpose::kData, 1, 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float magnitude = 0.1f + 1.9f * rng.uniform(2 * i);
    t[i] = rng.uniform(2 * i + 1) < 0.5f ? -magnitude : magnitude;
  }
  return t;
}

TEST(Activation, BackwardMatchesFiniteDifferencesForEveryKind) {
  kernels::KernelContext ctx;
  for (auto kind :
       {kernels::EltwiseKind::kRelu, kernels::EltwiseKind::kGelu, kernels::EltwiseKind::kTanh}) {
    SCOPED_TRACE(kernels::eltwise_kind_name(kind));
    Activation layer(0, Shape{3, 5}, kind);
    testing::expect_gradients_match(layer, away_from_zero({2, 3, 5}), ctx);
  }
}

TEST(Activation, ForwardConsumingKeepsTheInputItIsHanded) {
  kernels::KernelContext kernels;
  Activation layer(0, Shape{3, 5}, kernels::EltwiseKind::kGelu);
  testing::expect_forward_consuming_keeps_input(layer, away_from_zero({2, 3, 5}), kernels);
}

TEST(Activation, KeepsShapeAndNamesItsKind) {
  Activation layer(3, Shape{7}, kernels::parse_eltwise_kind("gelu"));
  EXPECT_EQ(layer.kind(), "gelu");
  EXPECT_EQ(layer.output_shape(), Shape({7}));
  EXPECT_TRUE(layer.param_specs().empty());
}

TEST(Activation, ReluZeroesNegativeInputs) {
  kernels::KernelContext kernels;
  Activation layer(0, Shape{4}, kernels::EltwiseKind::kRelu);
  const Tensor x(Shape{1, 4}, std::vector<float>{-1.0f, 2.0f, -3.0f, 4.0f});
  const Forward forward = layer.forward(x, LayerContext{.kernels = kernels});
  EXPECT_EQ(std::vector<float>(forward.output.span().begin(), forward.output.span().end()),
            (std::vector<float>{0.0f, 2.0f, 0.0f, 4.0f}));
}

TEST(Activation, RejectsEmptyInput) {
  EXPECT_THROW(Activation(0, Shape{0}, kernels::EltwiseKind::kTanh), InputError);
}

}  // namespace
}  // namespace mpipe::nn
