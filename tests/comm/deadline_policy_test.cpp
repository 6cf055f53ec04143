// Tests of the watchdog's deadlines (pure: no MPI): warm-up, the automatic timeout from the
// slowest measured step, long activities, configured values and the stop grace.
#include "comm/deadline_policy.h"

#include <gtest/gtest.h>

namespace mpipe::comm {
namespace {

CommConfig config(double timeout_s, double startup_s, double stop_grace_s) {
  return {.timeout_s = timeout_s, .startup_timeout_s = startup_s, .stop_grace_s = stop_grace_s};
}

// A policy that has seen the warm-up steps (not measured) and then steps of `seconds` each.
DeadlinePolicy after_steps(const CommConfig& settings, std::initializer_list<double> seconds) {
  DeadlinePolicy policy(settings);
  for (int i = 0; i < DeadlinePolicy::kWarmupSteps; ++i) policy.record_step(1000.0);
  for (double s : seconds) policy.record_step(s);
  return policy;
}

TEST(DeadlinePolicy, DefaultsAreTenMinutesAtStartUpAndAutoInSteps) {
  const CommConfig defaults;
  EXPECT_EQ(defaults.startup_timeout_s, 600.0);
  EXPECT_EQ(defaults.timeout_s, 0.0);
  EXPECT_EQ(defaults.stop_grace_s, 0.0);
}

TEST(DeadlinePolicy, WarmUpStepsHaveTheStartUpDeadlineAndAreNotMeasured) {
  DeadlinePolicy policy(config(3.0, 600.0, 0.0));
  for (int i = 0; i < DeadlinePolicy::kWarmupSteps; ++i) {
    EXPECT_FALSE(policy.warmed_up());
    EXPECT_EQ(policy.timeout(WaitPhase::kStep), 600.0);
    policy.record_step(50.0);  // a slow first step (primitive creation) must not count
  }
  EXPECT_TRUE(policy.warmed_up());
  EXPECT_EQ(policy.step_time(), 0.0);
  EXPECT_EQ(policy.timeout(WaitPhase::kStep), 3.0);
}

TEST(DeadlinePolicy, AutoTimeoutIsFiveMinutesOrTwentySlowestSteps) {
  EXPECT_EQ(after_steps({}, {0.1, 0.3, 0.2}).timeout(WaitPhase::kStep), 300.0);
  const DeadlinePolicy slow = after_steps({}, {20.0, 30.0, 25.0});
  EXPECT_EQ(slow.step_time(), 30.0);
  EXPECT_EQ(slow.timeout(WaitPhase::kStep), 600.0);
}

TEST(DeadlinePolicy, LongWaitsHaveTheStartUpDeadlineUntilTheirActivityRanOnce) {
  DeadlinePolicy policy = after_steps(config(3.0, 900.0, 0.0), {0.1});
  EXPECT_EQ(policy.timeout(WaitPhase::kStep), 3.0);
  EXPECT_EQ(policy.timeout(WaitPhase::kLong), 900.0);  // start-up, the end of the run
  EXPECT_EQ(policy.timeout(WaitPhase::kLong, "checkpoint"), 900.0);
  policy.record_long("checkpoint", 0.1);
  // A peer lost in the second checkpoint is given up as soon as one lost in a step.
  EXPECT_EQ(policy.timeout(WaitPhase::kLong, "checkpoint"), 3.0);
  EXPECT_EQ(policy.timeout(WaitPhase::kLong, "evaluation"), 900.0);  // not run yet
  EXPECT_EQ(policy.timeout(WaitPhase::kLong), 900.0);
}

TEST(DeadlinePolicy, AMeasuredLongActivityGetsTwentyOfItsSlowestRunsAtMostTheStartUpDeadline) {
  DeadlinePolicy policy = after_steps(config(3.0, 900.0, 0.0), {0.1});
  policy.record_long("checkpoint", 2.0);
  policy.record_long("checkpoint", 0.5);  // the slowest run counts
  EXPECT_EQ(policy.timeout(WaitPhase::kLong, "checkpoint"), 40.0);
  policy.record_long("evaluation", 60.0);
  EXPECT_EQ(policy.timeout(WaitPhase::kLong, "evaluation"), 900.0);
  // Auto (no comm.timeout): at least 5 min, as a step's.
  DeadlinePolicy automatic;
  automatic.record_long("checkpoint", 0.5);
  EXPECT_EQ(automatic.timeout(WaitPhase::kLong, "checkpoint"), 300.0);
  automatic.record_long("checkpoint", 20.0);
  EXPECT_EQ(automatic.timeout(WaitPhase::kLong, "checkpoint"), 400.0);
  // Never past comm.startup_timeout, which a user may have set below the rule's value.
  DeadlinePolicy short_startup(config(3.0, 20.0, 0.0));
  short_startup.record_long("checkpoint", 5.0);
  EXPECT_EQ(short_startup.timeout(WaitPhase::kLong, "checkpoint"), 20.0);
}

TEST(DeadlinePolicy, StopGraceIsTenSecondsOrTwoStepsAndNeverPastTheTimeout) {
  EXPECT_EQ(after_steps({}, {0.5}).stop_grace(WaitPhase::kStep), 10.0);
  EXPECT_EQ(after_steps({}, {8.0}).stop_grace(WaitPhase::kStep), 16.0);
  EXPECT_EQ(after_steps(config(3.0, 600.0, 0.0), {0.5}).stop_grace(WaitPhase::kStep), 3.0);
  EXPECT_EQ(after_steps(config(0.0, 600.0, 2.5), {8.0}).stop_grace(WaitPhase::kStep), 2.5);
}

TEST(DeadlinePolicy, AStopNeverCutsShortALongWaitNorAnUnmeasuredWarmUpStep) {
  EXPECT_EQ(after_steps({}, {0.5}).stop_grace(WaitPhase::kLong), std::nullopt);
  EXPECT_EQ(DeadlinePolicy().stop_grace(WaitPhase::kStep), std::nullopt);
  // A grace the user set applies from the first step (capped by its deadline).
  EXPECT_EQ(DeadlinePolicy(config(0.0, 600.0, 2.5)).stop_grace(WaitPhase::kStep), 2.5);
  EXPECT_EQ(DeadlinePolicy(config(0.0, 2.0, 2.5)).stop_grace(WaitPhase::kStep), 2.0);
}

}  // namespace
}  // namespace mpipe::comm
