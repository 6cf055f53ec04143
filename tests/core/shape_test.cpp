// Tests for Shape: element counts, batch replacement, per-example shapes and printing.
#include "core/shape.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"

namespace mpipe {
namespace {

TEST(Shape, NumelIsTheProductOfDimensions) {
  EXPECT_EQ((Shape{2, 3, 4}).numel(), 24);
  EXPECT_EQ((Shape{7}).numel(), 7);
  EXPECT_EQ((Shape{5, 0, 3}).numel(), 0);
  EXPECT_EQ(Shape().numel(), 1);  // a scalar has one element
}

TEST(Shape, WithBatchReplacesOnlyTheOutermostDimension) {
  const Shape s{2, 3, 4};
  EXPECT_EQ(s.with_batch(9), (Shape{9, 3, 4}));
  EXPECT_EQ(s, (Shape{2, 3, 4}));  // the original is unchanged
  EXPECT_THROW(Shape().with_batch(1), Error);
}

TEST(Shape, PerExampleDropsTheOutermostDimension) {
  EXPECT_EQ((Shape{8, 3, 4}).per_example(), (Shape{3, 4}));
  EXPECT_EQ((Shape{8}).per_example(), Shape());
  EXPECT_THROW(Shape().per_example(), Error);
}

TEST(Shape, StrPrintsBracketedCommaSeparatedDims) {
  EXPECT_EQ((Shape{2, 3}).str(), "[2, 3]");
  EXPECT_EQ((Shape{5}).str(), "[5]");
  EXPECT_EQ(Shape().str(), "[]");
  EXPECT_EQ(fmt::format("x {}", Shape{1, 2, 3}), "x [1, 2, 3]");
}

TEST(Shape, IndexingAndEqualityFollowTheDimensions) {
  Shape s{4, 5};
  EXPECT_EQ(s.rank(), 2);
  EXPECT_EQ(s[1], 5);
  s[1] = 6;
  EXPECT_EQ(s, (Shape{4, 6}));
  EXPECT_NE(s, (Shape{4, 6, 1}));
  EXPECT_THROW((void)s[2], std::out_of_range);
}

}  // namespace
}  // namespace mpipe
