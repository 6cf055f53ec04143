// Tests for the oneDNN matmul and linear kernels against the naive double-precision reference.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::random_values;

void expect_all_near(const std::vector<float>& actual, const std::vector<float>& expected,
                     float tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance * (1.0f + std::abs(expected[i])))
        << "element " << i;
  }
}

TEST(Matmul, MatchesReferenceForEveryTransposeCombinationBatchAndOddSize) {
  KernelContext ctx;
  const std::vector<MatmulShape> sizes = {
      {.batch = 1, .m = 1, .k = 1, .n = 1},    {.batch = 1, .m = 7, .k = 13, .n = 5},
      {.batch = 1, .m = 33, .k = 65, .n = 17}, {.batch = 3, .m = 9, .k = 4, .n = 11},
      {.batch = 2, .m = 64, .k = 31, .n = 48},
  };
  uint64_t stream = 0;
  for (MatmulShape shape : sizes) {
    for (int transposes = 0; transposes < 4; ++transposes) {
      for (float beta : {0.0f, 1.0f}) {
        for (float alpha : {1.0f, 0.5f}) {
          shape.transpose_a = transposes & 1;
          shape.transpose_b = transposes & 2;
          SCOPED_TRACE(::testing::Message()
                       << "batch " << shape.batch << " m " << shape.m << " k " << shape.k << " n "
                       << shape.n << " ta " << shape.transpose_a << " tb " << shape.transpose_b
                       << " alpha " << alpha << " beta " << beta);
          const auto a = random_values(shape.batch * shape.m * shape.k, ++stream);
          const auto b = random_values(shape.batch * shape.k * shape.n, ++stream);
          std::vector<float> c = random_values(shape.batch * shape.m * shape.n, ++stream);
          std::vector<float> expected = c;
          matmul(ctx, shape, a.data(), b.data(), c.data(), alpha, beta);
          reference::matmul(shape, a.data(), b.data(), expected.data(), alpha, beta);
          expect_all_near(c, expected, 1e-5f);
        }
      }
    }
  }
}

TEST(Matmul, GivesBitIdenticalResultsWhenRepeated) {
  KernelContext ctx;
  const MatmulShape shape{.batch = 1, .m = 70, .k = 300, .n = 90, .transpose_b = true};
  const auto a = random_values(shape.m * shape.k, 1);
  const auto b = random_values(shape.k * shape.n, 2);
  std::vector<float> first(static_cast<size_t>(shape.m * shape.n));
  std::vector<float> second(first.size(), 5.0f);
  matmul(ctx, shape, a.data(), b.data(), first.data());
  matmul(ctx, shape, a.data(), b.data(), second.data());
  EXPECT_EQ(first, second);
}

TEST(Matmul, WithEmptyInnerDimensionOverwritesOrKeepsTheOutput) {
  KernelContext ctx;
  const MatmulShape shape{.batch = 1, .m = 2, .k = 0, .n = 3};
  std::vector<float> c(6, 4.0f);
  matmul(ctx, shape, nullptr, nullptr, c.data(), 1.0f, 1.0f);
  EXPECT_EQ(c, std::vector<float>(6, 4.0f));
  matmul(ctx, shape, nullptr, nullptr, c.data(), 1.0f, 0.0f);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

TEST(Matmul, RejectsBetaOtherThanZeroOrOne) {
  KernelContext ctx;
  const MatmulShape shape{.m = 1, .k = 1, .n = 1};
  float a = 1, b = 1, c = 1;
  EXPECT_THROW(matmul(ctx, shape, &a, &b, &c, 1.0f, 0.5f), Error);
}

TEST(Linear, ForwardMatchesReferenceWithAndWithoutBias) {
  KernelContext ctx;
  for (auto [rows, in, out] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {5, 7, 3}, {37, 64, 29}}) {
    const auto x = random_values(rows * in, 1);
    const auto w = random_values(out * in, 2);
    const auto bias = random_values(out, 3);
    for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
      std::vector<float> y(static_cast<size_t>(rows * out), 9.0f), expected(y.size());
      linear_forward(ctx, x.data(), w.data(), b, y.data(), rows, in, out);
      reference::linear_forward(x.data(), w.data(), b, expected.data(), rows, in, out);
      expect_all_near(y, expected, 1e-5f);
    }
  }
}

TEST(Linear, BackwardDataMatchesReference) {
  KernelContext ctx;
  const int64_t rows = 23, in = 19, out = 41;
  const auto dy = random_values(rows * out, 1);
  const auto w = random_values(out * in, 2);
  std::vector<float> dx(static_cast<size_t>(rows * in), 9.0f), expected(dx.size());
  linear_backward_data(ctx, dy.data(), w.data(), dx.data(), rows, in, out);
  reference::linear_backward_data(dy.data(), w.data(), expected.data(), rows, in, out);
  expect_all_near(dx, expected, 1e-5f);
}

TEST(Linear, BackwardWeightsAccumulatesLikeReference) {
  KernelContext ctx;
  const int64_t rows = 23, in = 19, out = 41;
  const auto x = random_values(rows * in, 1);
  const auto dy = random_values(rows * out, 2);
  std::vector<float> dw = random_values(out * in, 3), dbias = random_values(out, 4);
  std::vector<float> expected_dw = dw, expected_dbias = dbias;
  for (int repeat = 0; repeat < 2; ++repeat) {
    linear_backward_weights(ctx, x.data(), dy.data(), dw.data(), dbias.data(), rows, in, out);
    reference::linear_backward_weights(x.data(), dy.data(), expected_dw.data(),
                                       expected_dbias.data(), rows, in, out);
  }
  expect_all_near(dw, expected_dw, 1e-5f);
  expect_all_near(dbias, expected_dbias, 1e-5f);
}

TEST(Linear, BackwardWeightsWithoutBiasLeavesOnlyWeightsChanged) {
  KernelContext ctx;
  const int64_t rows = 4, in = 3, out = 2;
  const auto x = random_values(rows * in, 1);
  const auto dy = random_values(rows * out, 2);
  std::vector<float> dw(static_cast<size_t>(out * in)), expected(dw.size());
  linear_backward_weights(ctx, x.data(), dy.data(), dw.data(), nullptr, rows, in, out);
  reference::linear_backward_weights(x.data(), dy.data(), expected.data(), nullptr, rows, in, out);
  expect_all_near(dw, expected, 1e-5f);
}

}  // namespace
}  // namespace mpipe::kernels
