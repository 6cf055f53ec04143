// oneDNN convolution kernels against the naive reference: forward, backward data and weights.
#include "kernels/conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bf16_values.h"
#include "core/error.h"
#include "expect_near.h"
#include "kernels/conv_reference.h"
#include "random_values.h"
#include "support/bf16_cpu.h"

namespace mpipe::kernels {
namespace {

using testing::random_values;

// This kernel's tolerance against its reference.
void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                     const char* what) {
  testing::expect_near_all(actual, expected, 1e-4, what);
}

struct Case {
  const char* name;
  Conv2dShape shape;
};

std::vector<Case> cases() {
  return {
      {"plain 3x3",
       {.batch = 2,
        .in_channels = 3,
        .height = 7,
        .width = 6,
        .out_channels = 4,
        .kernel_h = 3,
        .kernel_w = 3}},
      {"padding 1",
       {.batch = 2,
        .in_channels = 3,
        .height = 5,
        .width = 5,
        .out_channels = 2,
        .kernel_h = 3,
        .kernel_w = 3,
        .pad_h = 1,
        .pad_w = 1}},
      {"stride 2 odd size",
       {.batch = 1,
        .in_channels = 2,
        .height = 9,
        .width = 8,
        .out_channels = 3,
        .kernel_h = 3,
        .kernel_w = 3,
        .stride_h = 2,
        .stride_w = 2,
        .pad_h = 1,
        .pad_w = 1}},
      {"dilation 2",
       {.batch = 2,
        .in_channels = 2,
        .height = 8,
        .width = 8,
        .out_channels = 3,
        .kernel_h = 3,
        .kernel_w = 3,
        .pad_h = 2,
        .pad_w = 2,
        .dilation_h = 2,
        .dilation_w = 2}},
      {"groups 2",
       {.batch = 2,
        .in_channels = 4,
        .height = 5,
        .width = 5,
        .out_channels = 6,
        .kernel_h = 3,
        .kernel_w = 3,
        .pad_h = 1,
        .pad_w = 1,
        .groups = 2}},
      {"depthwise",
       {.batch = 2,
        .in_channels = 5,
        .height = 6,
        .width = 6,
        .out_channels = 5,
        .kernel_h = 3,
        .kernel_w = 3,
        .stride_h = 2,
        .stride_w = 2,
        .pad_h = 1,
        .pad_w = 1,
        .groups = 5}},
      {"pointwise", {.batch = 3, .in_channels = 6, .height = 4, .width = 3, .out_channels = 7}},
      {"rectangular kernel",
       {.batch = 1,
        .in_channels = 2,
        .height = 6,
        .width = 7,
        .out_channels = 2,
        .kernel_h = 1,
        .kernel_w = 3,
        .stride_h = 1,
        .stride_w = 2,
        .pad_h = 0,
        .pad_w = 1}},
  };
}

int64_t x_count(const Conv2dShape& s) { return s.batch * s.in_channels * s.height * s.width; }
int64_t w_count(const Conv2dShape& s) {
  return s.out_channels * (s.in_channels / s.groups) * s.kernel_h * s.kernel_w;
}
int64_t y_count(const Conv2dShape& s) {
  return s.batch * s.out_channels * s.out_height() * s.out_width();
}

TEST(Conv2dKernel, ForwardMatchesReference) {
  KernelContext ctx;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Conv2dShape& s = c.shape;
    const auto x = random_values(x_count(s), 1);
    const auto w = random_values(w_count(s), 2);
    const auto bias = random_values(s.out_channels, 3);
    for (bool with_bias : {true, false}) {
      std::vector<float> y(static_cast<size_t>(y_count(s))), expected(y.size());
      conv2d_forward(ctx, s, x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data());
      reference::conv2d_forward(s, x.data(), w.data(), with_bias ? bias.data() : nullptr,
                                expected.data());
      expect_near_all(y, expected, "y");
    }
  }
}

TEST(Conv2dKernel, BackwardDataMatchesReference) {
  KernelContext ctx;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Conv2dShape& s = c.shape;
    const auto dy = random_values(y_count(s), 4);
    const auto w = random_values(w_count(s), 2);
    std::vector<float> dx(static_cast<size_t>(x_count(s)), 5.0f), expected(dx.size());
    conv2d_backward_data(ctx, s, dy.data(), w.data(), dx.data());
    reference::conv2d_backward_data(s, dy.data(), w.data(), expected.data());
    expect_near_all(dx, expected, "dx");
  }
}

TEST(Conv2dKernel, BackwardWeightsAccumulatesLikeReference) {
  KernelContext ctx;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Conv2dShape& s = c.shape;
    const auto x = random_values(x_count(s), 1);
    const auto dy = random_values(y_count(s), 4);
    // Both start from the same non-zero gradients, so a kernel that overwrites fails.
    std::vector<float> dw = random_values(w_count(s), 5), dbias = random_values(s.out_channels, 6);
    std::vector<float> expected_dw = dw, expected_dbias = dbias;
    conv2d_backward_weights(ctx, s, x.data(), dy.data(), dw.data(), dbias.data());
    reference::conv2d_backward_weights(s, x.data(), dy.data(), expected_dw.data(),
                                       expected_dbias.data());
    expect_near_all(dw, expected_dw, "dw");
    expect_near_all(dbias, expected_dbias, "dbias");
    std::vector<float> dw_no_bias = random_values(w_count(s), 5);
    conv2d_backward_weights(ctx, s, x.data(), dy.data(), dw_no_bias.data(), nullptr);
    expect_near_all(dw_no_bias, expected_dw, "dw without bias");
  }
}

// bf16: every case against the reference on bf16-rounded operands (f32 accumulation: the f32
// tolerance) and on the f32 operands within the bf16 bound (reference on |operands|).
TEST(Conv2dKernel, Bf16ForwardMatchesReferenceOnRoundedOperandsAndWithinBf16Bound) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Conv2dShape& s = c.shape;
    const auto x = random_values(x_count(s), 1), w = random_values(w_count(s), 2);
    const auto bias = random_values(s.out_channels, 3);
    std::vector<float> y(static_cast<size_t>(y_count(s))), rounded(y.size()), exact(y.size()),
        bound(y.size());
    conv2d_forward(ctx, s, x.data(), w.data(), bias.data(), y.data());
    reference::conv2d_forward(s, testing::rounded_to_bf16(x).data(),
                              testing::rounded_to_bf16(w).data(), bias.data(), rounded.data());
    expect_near_all(y, rounded, "y vs rounded operands");
    reference::conv2d_forward(s, x.data(), w.data(), bias.data(), exact.data());
    reference::conv2d_forward(s, testing::absolute(x).data(), testing::absolute(w).data(), nullptr,
                              bound.data());
    testing::expect_within_bf16_bound(y, exact, bound, "y vs f32 operands");
  }
}

TEST(Conv2dKernel, Bf16BackwardDataMatchesReferenceOnRoundedOperands) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Conv2dShape& s = c.shape;
    const auto dy = random_values(y_count(s), 4), w = random_values(w_count(s), 2);
    std::vector<float> dx(static_cast<size_t>(x_count(s)), 5.0f), expected(dx.size());
    conv2d_backward_data(ctx, s, dy.data(), w.data(), dx.data());
    reference::conv2d_backward_data(s, testing::rounded_to_bf16(dy).data(),
                                    testing::rounded_to_bf16(w).data(), expected.data());
    expect_near_all(dx, expected, "dx");
  }
}

TEST(Conv2dKernel, Bf16BackwardWeightsAccumulatesInF32LikeReferenceOnRoundedOperands) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Conv2dShape& s = c.shape;
    const auto x = random_values(x_count(s), 1), dy = random_values(y_count(s), 4);
    std::vector<float> dw = random_values(w_count(s), 5);
    std::vector<float> expected = dw;
    conv2d_backward_weights(ctx, s, x.data(), dy.data(), dw.data(), nullptr);
    reference::conv2d_backward_weights(s, testing::rounded_to_bf16(x).data(),
                                       testing::rounded_to_bf16(dy).data(), expected.data(),
                                       nullptr);
    expect_near_all(dw, expected, "dw");
  }
}

TEST(Conv2dKernel, OutputSizeFollowsPyTorchFormula) {
  const Conv2dShape s{.batch = 1,
                      .in_channels = 1,
                      .height = 10,
                      .width = 11,
                      .out_channels = 1,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 2,
                      .stride_w = 3,
                      .pad_h = 1,
                      .pad_w = 0,
                      .dilation_h = 2,
                      .dilation_w = 1};
  EXPECT_EQ(s.out_height(), (10 + 2 - 2 * 2 - 1) / 2 + 1);
  EXPECT_EQ(s.out_width(), (11 - 2 - 1) / 3 + 1);
}

TEST(Conv2dKernel, RejectsChannelsNotDivisibleByGroups) {
  const Conv2dShape s{.batch = 1,
                      .in_channels = 3,
                      .height = 4,
                      .width = 4,
                      .out_channels = 4,
                      .kernel_h = 1,
                      .kernel_w = 1,
                      .groups = 2};
  EXPECT_THROW(s.validate(), Error);
}

TEST(Conv2dKernel, RejectsKernelLargerThanPaddedInput) {
  const Conv2dShape s{.batch = 1,
                      .in_channels = 1,
                      .height = 2,
                      .width = 4,
                      .out_channels = 1,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .dilation_h = 2};
  EXPECT_THROW(s.validate(), Error);
}

}  // namespace
}  // namespace mpipe::kernels
