// Tests for counted: a count with its noun in the singular or plural.
#include "core/counted.h"

#include <gtest/gtest.h>

namespace mpipe {
namespace {

TEST(Counted, SingularForOneOnly) {
  EXPECT_EQ(counted(1, "stage"), "1 stage");
  EXPECT_EQ(counted(2, "stage"), "2 stages");
  EXPECT_EQ(counted(0, "layer"), "0 layers");
  EXPECT_EQ(counted(1, "micro-batch", "micro-batches"), "1 micro-batch");
  EXPECT_EQ(counted(8, "micro-batch", "micro-batches"), "8 micro-batches");
}

}  // namespace
}  // namespace mpipe
