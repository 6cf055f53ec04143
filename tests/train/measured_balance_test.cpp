// distinct_speeds: stage speeds within 5% of their median count as the median; a clearly slower
// (or faster) stage keeps its own.
#include "train/measured_balance.h"

#include <gtest/gtest.h>

#include <vector>

namespace mpipe::train {
namespace {

TEST(MeasuredBalance, SpeedsWithinTheMinimumGainOfTheirMedianCountAsTheMedian) {
  // Median of 0.97, 1.0, 1.03 and 1.3: 1.015; the first three are within 5% of it.
  const std::vector<double> speeds = distinct_speeds({1.0, 1.03, 1.3, 0.97});
  ASSERT_EQ(speeds.size(), 4u);
  EXPECT_DOUBLE_EQ(speeds[0], 1.015);
  EXPECT_DOUBLE_EQ(speeds[1], 1.015);
  EXPECT_DOUBLE_EQ(speeds[2], 1.3);
  EXPECT_DOUBLE_EQ(speeds[3], 1.015);
}

TEST(MeasuredBalance, ASpeedJustOutsideTheMinimumGainStaysItsOwn) {
  const std::vector<double> speeds = distinct_speeds({1.0, 1.0, 1.06});
  EXPECT_DOUBLE_EQ(speeds[2], 1.06);
  EXPECT_DOUBLE_EQ(speeds[0], 1.0);
}

}  // namespace
}  // namespace mpipe::train
