// Tests for the crop/flip augmentation draws and their application.
#include "data/image_augment.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace mpipe::data {
namespace {

// image[y][x] = 10 * y + x + 1 on a 3x4 grid (no zeros, so zero fill is visible).
std::vector<uint8_t> grid() {
  std::vector<uint8_t> image(12);
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) image[static_cast<size_t>(y * 4 + x)] = uint8_t(10 * y + x + 1);
  }
  return image;
}

std::vector<uint8_t> augmented(const AugmentDraw& draw) {
  std::vector<uint8_t> out(12);
  apply_augment(grid(), 3, 4, draw, out);
  return out;
}

TEST(ApplyAugment, NoShiftNoFlipIsIdentity) { EXPECT_EQ(augmented({}), grid()); }

TEST(ApplyAugment, ShiftCropsThePaddedImage) {
  // Crop offset one below and one left of centre: out[y][x] = in[y + 1][x - 1].
  EXPECT_EQ(augmented({.shift_y = 1, .shift_x = -1}),
            (std::vector<uint8_t>{0, 11, 12, 13, 0, 21, 22, 23, 0, 0, 0, 0}));
}

TEST(ApplyAugment, FlipMirrorsEachRow) {
  EXPECT_EQ(augmented({.flip = true}),
            (std::vector<uint8_t>{4, 3, 2, 1, 14, 13, 12, 11, 24, 23, 22, 21}));
}

TEST(ApplyAugment, FlipAppliesAfterTheCrop) {
  // Cropped: in[y][x + 1] -> {2,3,4,0 / 12,13,14,0 / ...}; then mirrored.
  EXPECT_EQ(augmented({.shift_x = 1, .flip = true}),
            (std::vector<uint8_t>{0, 4, 3, 2, 0, 14, 13, 12, 0, 24, 23, 22}));
}

TEST(DrawAugment, IsAPureFunctionOfSeedExampleAndStep) {
  const AugmentDraw a = draw_augment(1, 17, 3, 4, true), b = draw_augment(1, 17, 3, 4, true);
  EXPECT_EQ(a.shift_y, b.shift_y);
  EXPECT_EQ(a.shift_x, b.shift_x);
  EXPECT_EQ(a.flip, b.flip);
}

TEST(DrawAugment, ShiftsCoverThePaddingRangeAndFlipsHalfTheTime) {
  std::set<int64_t> shifts;
  int flips = 0;
  for (int64_t step = 0; step < 1000; ++step) {
    const AugmentDraw draw = draw_augment(2, 5, step, 2, true);
    ASSERT_GE(draw.shift_y, -2);
    ASSERT_LE(draw.shift_y, 2);
    ASSERT_GE(draw.shift_x, -2);
    ASSERT_LE(draw.shift_x, 2);
    shifts.insert(draw.shift_x);
    flips += draw.flip ? 1 : 0;
  }
  EXPECT_EQ(shifts.size(), 5u);
  EXPECT_NEAR(flips, 500, 60);
}

TEST(DrawAugment, DependsOnExampleAndStep) {
  int differ_by_step = 0, differ_by_example = 0;
  for (int64_t i = 0; i < 50; ++i) {
    const AugmentDraw base = draw_augment(3, i, i, 3, true);
    const AugmentDraw next_step = draw_augment(3, i, i + 1, 3, true);
    const AugmentDraw next_example = draw_augment(3, i + 1, i, 3, true);
    differ_by_step += base.shift_x != next_step.shift_x || base.shift_y != next_step.shift_y;
    differ_by_example +=
        base.shift_x != next_example.shift_x || base.shift_y != next_example.shift_y;
  }
  EXPECT_GT(differ_by_step, 35);
  EXPECT_GT(differ_by_example, 35);
}

TEST(DrawAugment, NoPaddingAndNoFlipDrawsNothing) {
  for (int64_t step = 0; step < 20; ++step) {
    const AugmentDraw draw = draw_augment(4, 1, step, 0, false);
    EXPECT_EQ(draw.shift_x, 0);
    EXPECT_EQ(draw.shift_y, 0);
    EXPECT_FALSE(draw.flip);
  }
}

}  // namespace
}  // namespace mpipe::data
