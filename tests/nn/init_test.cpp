// Tests for parameter initialization: distributions, and values independent of the partition.
#include "nn/init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "nn/linear.h"
#include "nn/param_buffer.h"

namespace mpipe::nn {
namespace {

TEST(Init, LayerValuesDoNotDependOnWhichOtherLayersShareTheBuffer) {
  Linear a0(0, Shape{8}, 6), a1(1, Shape{6}, 4);
  Linear b1(1, Shape{6}, 4);
  Layer* both[] = {&a0, &a1};
  Layer* alone[] = {&b1};
  ParamBuffer whole(both), stage(alone);
  whole.initialize(17);
  stage.initialize(17);
  // Layer 1's weight and bias hold the same values in both buffers.
  ASSERT_EQ(stage.entries().size(), 2u);
  ASSERT_EQ(whole.entries().size(), 4u);
  for (size_t e = 0; e < 2; ++e) {
    const auto& mine = stage.entries()[e];
    const auto& theirs = whole.entries()[e + 2];
    ASSERT_EQ(mine.name, theirs.name);
    for (int64_t i = 0; i < mine.shape.numel(); ++i) {
      ASSERT_EQ(stage.values()[static_cast<size_t>(mine.offset + i)],
                whole.values()[static_cast<size_t>(theirs.offset + i)]);
    }
  }
}

TEST(Init, KaimingUniformStaysWithinItsBoundWithTheRightSpread) {
  const ParamSpec spec{
      .name = "weight", .shape = {100, 150}, .init = Init::kKaimingUniform, .fan_in = 150};
  std::vector<float> values(15000);
  initialize_param(values, spec, 1, 0, 0);
  const double bound = std::sqrt(6.0 / 150);
  double sum_squares = 0;
  for (float v : values) {
    ASSERT_LE(std::abs(v), bound);
    sum_squares += v * v;
  }
  EXPECT_NEAR(sum_squares / 15000, bound * bound / 3, 0.05 * bound * bound / 3);
}

TEST(Init, XavierNormalZerosAndOnesFollowTheirSpec) {
  std::vector<float> values(4000);
  initialize_param(
      values,
      {.name = "w", .shape = {4000}, .init = Init::kXavierUniform, .fan_in = 10, .fan_out = 14}, 1,
      0, 0);
  for (float v : values) ASSERT_LE(std::abs(v), std::sqrt(6.0 / 24));
  initialize_param(values, {.name = "w", .shape = {4000}, .init = Init::kNormal, .std = 0.5f}, 1, 0,
                   0);
  double sum_squares = 0;
  for (float v : values) sum_squares += v * v;
  EXPECT_NEAR(std::sqrt(sum_squares / 4000), 0.5, 0.03);
  initialize_param(values, {.name = "b", .shape = {4000}, .init = Init::kOnes}, 1, 0, 0);
  EXPECT_EQ(values, std::vector<float>(4000, 1.0f));
  initialize_param(values, {.name = "b", .shape = {4000}, .init = Init::kZeros}, 1, 0, 0);
  EXPECT_EQ(values, std::vector<float>(4000, 0.0f));
}

TEST(Init, DifferentSeedsLayersAndParamsGiveDifferentValues) {
  const ParamSpec spec{.name = "w", .shape = {16}, .init = Init::kKaimingUniform, .fan_in = 4};
  std::vector<float> base(16), seed(16), layer(16), param(16);
  initialize_param(base, spec, 1, 0, 0);
  initialize_param(seed, spec, 2, 0, 0);
  initialize_param(layer, spec, 1, 1, 0);
  initialize_param(param, spec, 1, 0, 1);
  EXPECT_NE(base, seed);
  EXPECT_NE(base, layer);
  EXPECT_NE(base, param);
}

TEST(Init, RejectsASizeMismatch) {
  std::vector<float> values(3);
  EXPECT_THROW(initialize_param(values, {.name = "w", .shape = {4}}, 1, 0, 0), Error);
}

}  // namespace
}  // namespace mpipe::nn
