// Tests for when the supervisor gives up: after --max-restarts restarts, or with no host left.
#include "supervise/retry_policy.h"

#include <gtest/gtest.h>

namespace mpipe::supervise {
namespace {

TEST(RetryPolicy, RelaunchesWhileRestartsAreLeftAndAHostAnswers) {
  const std::vector<HostSlots> one = {{.host = "h1", .slots = 2}};
  EXPECT_EQ(give_up_reason(0, 3, one), std::nullopt);
  EXPECT_EQ(give_up_reason(2, 3, one), std::nullopt);
  EXPECT_EQ(give_up_reason(3, 3, one), "restarted 3 times already (--max-restarts 3)");
  EXPECT_EQ(give_up_reason(1, 1, one), "restarted 1 time already (--max-restarts 1)");
  EXPECT_EQ(give_up_reason(0, 0, one), "restarted 0 times already (--max-restarts 0)");
  EXPECT_EQ(give_up_reason(0, 3, {}), "no host answers");
}

}  // namespace
}  // namespace mpipe::supervise
