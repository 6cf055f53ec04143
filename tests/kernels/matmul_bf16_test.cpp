// bf16 matmul and linear kernels: f32 accumulation of bf16-rounded operands, checked against the
// double-precision reference on rounded operands (tight) and on the f32 operands (bf16 bound).
#include <gtest/gtest.h>

#include <vector>

#include "bf16_values.h"
#include "expect_near.h"
#include "kernels/conv.h"
#include "kernels/matmul.h"
#include "kernels/reference.h"
#include "random_values.h"
#include "support/bf16_cpu.h"

namespace mpipe::kernels {
namespace {

using testing::absolute;
using testing::random_values;
using testing::rounded_to_bf16;

TEST(MatmulBf16, RoundsOperandsToEightSignificantBitsAndAccumulatesInF32) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  // 1 + 2^-10 is not a bf16 number: it rounds to 1. The sum of 300 products of 1 stays exact in
  // f32 accumulation (it would not in bf16: 257 is not a bf16 number).
  const MatmulShape shape{.m = 1, .k = 300, .n = 1};
  const std::vector<float> a(300, 1.0f + 0x1p-10f), b(300, 1.0f);
  float c = 0.0f;
  matmul(ctx, shape, a.data(), b.data(), &c);
  EXPECT_EQ(c, 300.0f);
}

TEST(MatmulBf16, MatchesReferenceForEveryTransposeCombinationBatchAndOddSize) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  const std::vector<MatmulShape> sizes = {
      {.batch = 1, .m = 1, .k = 1, .n = 1},     {.batch = 1, .m = 7, .k = 13, .n = 5},
      {.batch = 1, .m = 33, .k = 650, .n = 17}, {.batch = 3, .m = 9, .k = 4, .n = 11},
      {.batch = 2, .m = 64, .k = 31, .n = 48},
  };
  uint64_t stream = 0;
  for (MatmulShape shape : sizes) {
    for (int transposes = 0; transposes < 4; ++transposes) {
      for (float beta : {0.0f, 1.0f}) {
        const float alpha = 0.5f;
        shape.transpose_a = transposes & 1;
        shape.transpose_b = transposes & 2;
        SCOPED_TRACE(::testing::Message()
                     << "batch " << shape.batch << " m " << shape.m << " k " << shape.k << " n "
                     << shape.n << " ta " << shape.transpose_a << " tb " << shape.transpose_b
                     << " beta " << beta);
        const auto a = random_values(shape.batch * shape.m * shape.k, ++stream);
        const auto b = random_values(shape.batch * shape.k * shape.n, ++stream);
        std::vector<float> c = random_values(shape.batch * shape.m * shape.n, ++stream);
        std::vector<float> rounded = c, exact = c, bound(c.size(), 0.0f);
        matmul(ctx, shape, a.data(), b.data(), c.data(), alpha, beta);
        reference::matmul(shape, rounded_to_bf16(a).data(), rounded_to_bf16(b).data(),
                          rounded.data(), alpha, beta);
        testing::expect_near_all(c, rounded, 1e-5, "c vs rounded operands");
        reference::matmul(shape, a.data(), b.data(), exact.data(), alpha, beta);
        reference::matmul(shape, absolute(a).data(), absolute(b).data(), bound.data(), alpha);
        testing::expect_within_bf16_bound(c, exact, bound, "c vs f32 operands");
      }
    }
  }
}

TEST(LinearBf16, ForwardAndBackwardMatchReferenceOnRoundedOperands) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  const int64_t rows = 37, in = 300, out = 29;
  const auto x = random_values(rows * in, 1), w = random_values(out * in, 2);
  const auto bias = random_values(out, 3), dy = random_values(rows * out, 4);
  const auto xr = rounded_to_bf16(x), wr = rounded_to_bf16(w), dyr = rounded_to_bf16(dy);

  std::vector<float> y(static_cast<size_t>(rows * out)), y_ref(y.size());
  linear_forward(ctx, x.data(), w.data(), bias.data(), y.data(), rows, in, out);
  reference::linear_forward(xr.data(), wr.data(), bias.data(), y_ref.data(), rows, in, out);
  testing::expect_near_all(y, y_ref, 1e-5, "y");

  std::vector<float> dx(static_cast<size_t>(rows * in)), dx_ref(dx.size());
  linear_backward_data(ctx, dy.data(), w.data(), dx.data(), rows, in, out);
  reference::linear_backward_data(dyr.data(), wr.data(), dx_ref.data(), rows, in, out);
  testing::expect_near_all(dx, dx_ref, 1e-5, "dx");

  // The weight gradient accumulates in f32; the bias gradient is an f32 sum of dy (not rounded).
  std::vector<float> dw = random_values(out * in, 5), dbias = random_values(out, 6);
  std::vector<float> dw_ref = dw, dbias_ref = dbias;
  linear_backward_weights(ctx, x.data(), dy.data(), dw.data(), dbias.data(), rows, in, out);
  reference::linear_backward_weights(xr.data(), dyr.data(), dw_ref.data(), nullptr, rows, in, out);
  reference::linear_backward_weights(xr.data(), dy.data(), std::vector<float>(dw.size()).data(),
                                     dbias_ref.data(), rows, in, out);
  testing::expect_near_all(dw, dw_ref, 1e-5, "dw");
  testing::expect_near_all(dbias, dbias_ref, 1e-5, "dbias");
}

TEST(LinearBf16, GivesBitIdenticalResultsWhenRepeated) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  const int64_t rows = 70, in = 300, out = 90;
  const auto x = random_values(rows * in, 1), w = random_values(out * in, 2);
  std::vector<float> first(static_cast<size_t>(rows * out)), second(first.size(), 5.0f);
  linear_forward(ctx, x.data(), w.data(), nullptr, first.data(), rows, in, out);
  linear_forward(ctx, x.data(), w.data(), nullptr, second.data(), rows, in, out);
  EXPECT_EQ(first, second);
}

// linear_backward (one conversion of dy in bf16) gives the bits of linear_backward_weights and
// linear_backward_data called apart, in both precisions, accumulating or not, with or without dx.
TEST(LinearBf16, BackwardGivesTheBitsOfItsTwoProductsCalledApart) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  for (const Precision precision : {Precision::kF32, Precision::kBf16}) {
    for (const bool accumulate : {true, false}) {
      for (const bool with_dx : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << to_string(precision) << " accumulate " << accumulate << " dx " << with_dx);
        KernelContext ctx(precision);
        const int64_t rows = 37, in = 29, out = 53;
        const auto x = random_values(rows * in, 1), dy = random_values(rows * out, 2);
        const auto w = random_values(out * in, 3);
        std::vector<float> dw = random_values(out * in, 4), dbias = random_values(out, 5);
        std::vector<float> dx(static_cast<size_t>(rows * in), 7.0f);
        std::vector<float> apart_dw = dw, apart_dbias = dbias, apart_dx = dx;
        linear_backward(ctx, x.data(), dy.data(), w.data(), with_dx ? dx.data() : nullptr,
                        dw.data(), dbias.data(), rows, in, out, accumulate);
        linear_backward_weights(ctx, x.data(), dy.data(), apart_dw.data(), apart_dbias.data(), rows,
                                in, out, accumulate);
        if (with_dx) linear_backward_data(ctx, dy.data(), w.data(), apart_dx.data(), rows, in, out);
        EXPECT_EQ(dw, apart_dw);
        EXPECT_EQ(dbias, apart_dbias);
        EXPECT_EQ(dx, apart_dx);
      }
    }
  }
}

// The bf16 copy of a weight is made once per WeightsFixed scope: a weight changed inside a scope
// (which the scope forbids) is not seen until the next scope, and outside scopes every call
// converts again.
TEST(LinearBf16, WeightIsConvertedOncePerWeightsFixedScope) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  const int64_t rows = 3, in = 4, out = 2;
  const std::vector<float> x(rows * in, 1.0f);
  std::vector<float> w(out * in, 1.0f), y(rows * out);
  auto forward = [&] {
    linear_forward(ctx, x.data(), w.data(), nullptr, y.data(), rows, in, out);
    return y[0];
  };
  {
    const WeightsFixed fixed(ctx);
    EXPECT_EQ(forward(), 4.0f);
    w.assign(w.size(), 2.0f);
    EXPECT_EQ(forward(), 4.0f);
    std::vector<float> dx(rows * in);
    linear_backward_data(ctx, y.data(), w.data(), dx.data(), rows, in, out);
    EXPECT_EQ(dx[0], 8.0f);  // 2 outputs of 4, times the weights converted first (1)
  }
  EXPECT_EQ(forward(), 8.0f);
  w.assign(w.size(), 3.0f);
  EXPECT_EQ(forward(), 12.0f);
  const WeightsFixed next(ctx);
  EXPECT_EQ(forward(), 12.0f);
}

TEST(Conv2dBf16, WeightIsConvertedOncePerWeightsFixedScope) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  const Conv2dShape s{.batch = 1,
                      .in_channels = 2,
                      .height = 3,
                      .width = 3,
                      .out_channels = 2,
                      .kernel_h = 3,
                      .kernel_w = 3};
  const std::vector<float> x(18, 1.0f);
  std::vector<float> w(36, 1.0f), y(2);
  auto forward = [&] {
    conv2d_forward(ctx, s, x.data(), w.data(), nullptr, y.data());
    return y[0];
  };
  {
    const WeightsFixed fixed(ctx);
    EXPECT_EQ(forward(), 18.0f);
    w.assign(w.size(), 2.0f);
    EXPECT_EQ(forward(), 18.0f);
  }
  EXPECT_EQ(forward(), 36.0f);
}

}  // namespace
}  // namespace mpipe::kernels
