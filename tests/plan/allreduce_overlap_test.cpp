// Tests for allreduce_end: gradients queue on the link in the order given, each from its ready
// time.
#include "plan/allreduce_overlap.h"

#include <gtest/gtest.h>

namespace mpipe::plan {
namespace {

TEST(AllreduceEnd, NothingToSendEndsAtZero) { EXPECT_EQ(allreduce_end({}), 0.0); }

TEST(AllreduceEnd, AGradientReadyAfterTheLinkIsFreeStartsWhenReady) {
  EXPECT_EQ(allreduce_end({{.ready = 1.0, .transfer = 2.0}, {.ready = 5.0, .transfer = 1.0}}), 6.0);
}

TEST(AllreduceEnd, GradientsReadyTogetherQueueOnTheLink) {
  EXPECT_EQ(allreduce_end({{.ready = 1.0, .transfer = 2.0}, {.ready = 1.5, .transfer = 3.0}}), 6.0);
}

}  // namespace
}  // namespace mpipe::plan
