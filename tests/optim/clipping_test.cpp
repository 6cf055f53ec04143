// Tests for gradient clipping: global norm in layer order, coefficient and scaling.
#include "optim/clipping.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace mpipe::optim {
namespace {

TEST(GlobalNorm, IsSquareRootOfTheSumOfPerLayerSquareSums) {
  const std::vector<std::pair<int, double>> sums = {{2, 9.0}, {0, 16.0}, {1, 0.0}};
  EXPECT_DOUBLE_EQ(global_norm(sums), 5.0);
}

TEST(GlobalNorm, IsBitIdenticalWhateverOrderTheStagesReportIn) {
  // Values whose floating-point sum depends on the order of addition.
  const std::vector<std::pair<int, double>> in_order = {{0, 1e16}, {1, 1.0}, {2, -1e16}, {3, 1.0}};
  const std::vector<std::pair<int, double>> shuffled = {{3, 1.0}, {1, 1.0}, {2, -1e16}, {0, 1e16}};
  double ascending = 0.0;
  for (const auto& [layer, sum] : in_order) ascending += sum;
  EXPECT_EQ(global_norm(shuffled), std::sqrt(ascending));
  EXPECT_EQ(global_norm(shuffled), global_norm(in_order));
}

TEST(GlobalNorm, RejectsALayerReportedTwice) {
  const std::vector<std::pair<int, double>> sums = {{0, 1.0}, {0, 2.0}};
  EXPECT_THROW(global_norm(sums), Error);
}

TEST(GlobalNorm, OfNoLayersIsZero) { EXPECT_EQ(global_norm({}), 0.0); }

TEST(ClipCoefficient, IsOneWhenClippingIsOff) {
  EXPECT_EQ(clip_coefficient(100.0, 0.0), 1.0);
  EXPECT_EQ(clip_coefficient(100.0, -1.0), 1.0);
}

TEST(ClipCoefficient, IsOneWhenNormIsBelowMax) { EXPECT_EQ(clip_coefficient(0.5, 1.0), 1.0); }

TEST(ClipCoefficient, ScalesNormDownToMaxWhenAbove) {
  EXPECT_DOUBLE_EQ(clip_coefficient(5.0, 1.0), 1.0 / (5.0 + 1e-6));
}

TEST(Scale, MultipliesEveryGradient) {
  std::vector<float> grads = {1.0f, -2.0f, 4.0f};
  scale(grads, 0.5);
  EXPECT_EQ(grads, (std::vector<float>{0.5f, -1.0f, 2.0f}));
}

}  // namespace
}  // namespace mpipe::optim
