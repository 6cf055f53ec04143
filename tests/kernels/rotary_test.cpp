// Rotary position embedding kernel tests: against the naive reference (angles computed where
// they are used, in double), the inverse undoing the rotation, and norms kept.
#include "kernels/rotary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "expect_near.h"
#include "kernels/transformer_reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::expect_near_all;
using testing::random_values;

constexpr int64_t kSlices = 6, kSeq = 9, kHeadDim = 8;

TEST(RotaryKernel, RotationAndItsInverseMatchTheReference) {
  for (double base : {10000.0, 10.0}) {
    for (bool inverse : {false, true}) {
      const auto x = random_values(kSlices * kSeq * kHeadDim, 1);
      std::vector<float> y = x, expected(x.size());
      rotary_apply(rotary_table(kSeq, kHeadDim, base), y.data(), kSlices, inverse);
      reference::rotary_apply(x.data(), expected.data(), kSlices, kSeq, kHeadDim, base, inverse);
      expect_near_all(y, expected, 1e-6, inverse ? "inverse" : "rotation");
    }
  }
}

TEST(RotaryKernel, InverseUndoesTheRotationAndPairsKeepTheirLength) {
  const auto x = random_values(kSlices * kSeq * kHeadDim, 2);
  const RotaryTable table = rotary_table(kSeq, kHeadDim, 100.0);
  std::vector<float> y = x;
  rotary_apply(table, y.data(), kSlices, false);
  constexpr int64_t half = kHeadDim / 2;
  for (int64_t row = 0; row < kSlices * kSeq; ++row) {
    for (int64_t i = 0; i < half; ++i) {
      const float* a = x.data() + row * kHeadDim;
      const float* b = y.data() + row * kHeadDim;
      EXPECT_NEAR(std::hypot(a[i], a[i + half]), std::hypot(b[i], b[i + half]), 1e-6);
    }
  }
  // Position 0 is not rotated; a later one is.
  for (int64_t j = 0; j < kHeadDim; ++j) EXPECT_EQ(y[j], x[j]);
  EXPECT_NE(y[kHeadDim], x[kHeadDim]);
  rotary_apply(table, y.data(), kSlices, true);
  expect_near_all(y, x, 1e-6, "round trip");
}

TEST(RotaryKernel, TableNeedsAnEvenHeadWidth) { EXPECT_THROW(rotary_table(4, 5, 10000.0), Error); }

}  // namespace
}  // namespace mpipe::kernels
