// oneDNN pooling kernels (max, average, global average) against the naive reference.
#include "kernels/pooling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "expect_near.h"
#include "kernels/conv_reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::random_values;

// This kernel's tolerance against its reference.
void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                     const char* what) {
  testing::expect_near_all(actual, expected, 1e-5, what);
}

std::vector<Pool2dShape> shapes(PoolKind kind) {
  return {
      {.batch = 2,
       .channels = 3,
       .height = 6,
       .width = 6,
       .kernel_h = 2,
       .kernel_w = 2,
       .stride_h = 2,
       .stride_w = 2,
       .kind = kind},
      {.batch = 2,
       .channels = 2,
       .height = 7,
       .width = 5,
       .kernel_h = 3,
       .kernel_w = 3,
       .stride_h = 2,
       .stride_w = 2,
       .pad_h = 1,
       .pad_w = 1,
       .kind = kind},
      {.batch = 1,
       .channels = 2,
       .height = 5,
       .width = 6,
       .kernel_h = 3,
       .kernel_w = 2,
       .stride_h = 1,
       .stride_w = 1,
       .pad_h = 1,
       .pad_w = 0,
       .kind = kind},
      // Global: the kernel covers the whole input.
      {.batch = 3,
       .channels = 4,
       .height = 4,
       .width = 3,
       .kernel_h = 4,
       .kernel_w = 3,
       .kind = kind},
  };
}

int64_t x_count(const Pool2dShape& s) { return s.batch * s.channels * s.height * s.width; }
int64_t y_count(const Pool2dShape& s) {
  return s.batch * s.channels * s.out_height() * s.out_width();
}

void check_against_reference(PoolKind kind) {
  KernelContext ctx;
  for (const Pool2dShape& s : shapes(kind)) {
    SCOPED_TRACE(s.key());
    // Distinct values (a random permutation-like sequence) so max pooling has no ties.
    std::vector<float> x = random_values(x_count(s), 31);
    for (size_t i = 0; i < x.size(); ++i) x[i] += 1e-3f * static_cast<float>(i);
    const auto dy = random_values(y_count(s), 32);
    std::vector<float> y(static_cast<size_t>(y_count(s))), y_ref(y.size());
    std::vector<char> workspace(pool2d_workspace_bytes(ctx, s));
    pool2d_forward(ctx, s, x.data(), y.data(), workspace.empty() ? nullptr : workspace.data());
    reference::pool2d_forward(s, x.data(), y_ref.data());
    expect_near_all(y, y_ref, "y");
    std::vector<float> dx(x.size(), 9.0f), dx_ref(x.size());
    pool2d_backward(ctx, s, dy.data(), workspace.empty() ? nullptr : workspace.data(), dx.data());
    reference::pool2d_backward(s, x.data(), dy.data(), dx_ref.data());
    expect_near_all(dx, dx_ref, "dx");
    // An inference forward (no workspace) gives the same output.
    std::vector<float> y_inference(y.size());
    pool2d_forward(ctx, s, x.data(), y_inference.data(), nullptr);
    expect_near_all(y_inference, y_ref, "inference y");
  }
}

TEST(PoolKernel, MaxPoolingMatchesReference) { check_against_reference(PoolKind::kMax); }

TEST(PoolKernel, AverageIncludingPaddingMatchesReference) {
  check_against_reference(PoolKind::kAvgIncludePadding);
}

TEST(PoolKernel, AverageExcludingPaddingMatchesReference) {
  check_against_reference(PoolKind::kAvgExcludePadding);
}

TEST(PoolKernel, MaxPoolingNeedsAWorkspaceAndAveragePoolingNone) {
  KernelContext ctx;
  EXPECT_GT(pool2d_workspace_bytes(ctx, shapes(PoolKind::kMax)[0]), 0u);
  EXPECT_EQ(pool2d_workspace_bytes(ctx, shapes(PoolKind::kAvgIncludePadding)[0]), 0u);
  const Pool2dShape s = shapes(PoolKind::kMax)[0];
  std::vector<float> dy(static_cast<size_t>(y_count(s))), dx(static_cast<size_t>(x_count(s)));
  EXPECT_THROW(pool2d_backward(ctx, s, dy.data(), nullptr, dx.data()), Error);
}

TEST(PoolKernel, RejectsPaddingAsLargeAsTheKernel) {
  const Pool2dShape s{.batch = 1,
                      .channels = 1,
                      .height = 4,
                      .width = 4,
                      .kernel_h = 2,
                      .kernel_w = 2,
                      .pad_h = 2,
                      .pad_w = 0};
  EXPECT_THROW(s.validate(), Error);
}

}  // namespace
}  // namespace mpipe::kernels
