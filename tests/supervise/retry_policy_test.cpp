// Tests for when the supervisor gives up: after --max-restarts restarts, with no host left, or
// after a failed launch with every host answering.
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

TEST(RetryPolicy, AFailedLaunchIsRelaunchedOnlyWhenAHostNoLongerAnswers) {
  const std::vector<HostSlots> three = {
      {.host = "h1", .slots = 1}, {.host = "h2", .slots = 1}, {.host = "h3", .slots = 1}};
  const std::vector<HostSlots> one = {{.host = "h1", .slots = 1}};
  const JobEnd launch{.outcome = JobOutcome::kLost,
                      .exit_code = 255,
                      .meaning = "mpirun could not start a host's daemon",
                      .lost_if_a_host_is_gone = true};
  EXPECT_EQ(no_host_lost_reason(launch, three, one), std::nullopt);
  EXPECT_EQ(no_host_lost_reason(launch, three, three), "every host answers, so no host was lost");
  const JobEnd lost{.outcome = JobOutcome::kLost, .exit_code = 205, .meaning = "lost"};
  EXPECT_EQ(no_host_lost_reason(lost, three, three), std::nullopt);
}

}  // namespace
}  // namespace mpipe::supervise
