// Tests for the oneDNN eltwise activations against the naive double-precision reference.
#include "kernels/eltwise.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "kernels/reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::random_values;

constexpr EltwiseKind kKinds[] = {EltwiseKind::kRelu, EltwiseKind::kGelu, EltwiseKind::kTanh};

TEST(Eltwise, ForwardMatchesReference) {
  KernelContext ctx;
  for (EltwiseKind kind : kKinds) {
    SCOPED_TRACE(eltwise_kind_name(kind));
    const auto x = random_values(1001, 1, -5.0f, 5.0f);
    std::vector<float> y(x.size()), expected(x.size());
    eltwise_forward(ctx, kind, x.data(), y.data(), 1001);
    reference::eltwise_forward(kind, x.data(), expected.data(), 1001);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-5f) << "x " << x[i];
  }
}

TEST(Eltwise, BackwardMatchesReference) {
  KernelContext ctx;
  for (EltwiseKind kind : kKinds) {
    SCOPED_TRACE(eltwise_kind_name(kind));
    const auto x = random_values(777, 1, -5.0f, 5.0f);
    const auto dy = random_values(777, 2);
    std::vector<float> dx(x.size()), expected(x.size());
    eltwise_backward(ctx, kind, x.data(), dy.data(), dx.data(), 777);
    reference::eltwise_backward(kind, x.data(), dy.data(), expected.data(), 777);
    for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(dx[i], expected[i], 1e-5f) << "x " << x[i];
  }
}

TEST(Eltwise, WorksInPlace) {
  KernelContext ctx;
  const auto x = random_values(64, 1, -3.0f, 3.0f);
  std::vector<float> y = x, expected(x.size());
  eltwise_forward(ctx, EltwiseKind::kGelu, y.data(), y.data(), 64);
  reference::eltwise_forward(EltwiseKind::kGelu, x.data(), expected.data(), 64);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-5f);
  const auto dy = random_values(64, 2);
  std::vector<float> dx = dy, expected_dx(x.size());
  eltwise_backward(ctx, EltwiseKind::kTanh, x.data(), dx.data(), dx.data(), 64);
  reference::eltwise_backward(EltwiseKind::kTanh, x.data(), dy.data(), expected_dx.data(), 64);
  for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(dx[i], expected_dx[i], 1e-5f);
}

TEST(Eltwise, ReluHasZeroGradientAtAndBelowZero) {
  KernelContext ctx;
  const std::vector<float> x = {-1.0f, 0.0f, 2.0f}, dy = {5.0f, 5.0f, 5.0f};
  std::vector<float> dx(3);
  eltwise_backward(ctx, EltwiseKind::kRelu, x.data(), dy.data(), dx.data(), 3);
  EXPECT_EQ(dx, (std::vector<float>{0.0f, 0.0f, 5.0f}));
}

TEST(Eltwise, ParsesKnownNamesAndRejectsOthers) {
  for (EltwiseKind kind : kKinds) EXPECT_EQ(parse_eltwise_kind(eltwise_kind_name(kind)), kind);
  EXPECT_THROW(parse_eltwise_kind("sigmoid"), InputError);
}

}  // namespace
}  // namespace mpipe::kernels
