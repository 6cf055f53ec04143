// Tests for learning_rate: warm-up and the constant, step, cosine, linear, warmup-stable-decay
// and inverse-square-root schedules at their boundary steps, against their closed forms.
#include "optim/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace mpipe::optim {
namespace {

OptimizerConfig schedule_of(LrScheduleKind kind, int64_t warmup_steps) {
  OptimizerConfig config;
  config.lr = 0.1;
  config.schedule.kind = kind;
  config.schedule.warmup_steps = warmup_steps;
  config.schedule.step_size = 3;
  config.schedule.gamma = 0.5;
  config.schedule.min_lr = 0.01;
  return config;
}

TEST(LearningRate, ConstantWithoutWarmupIsTheBaseRateFromStepZero) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kConstant, 0);
  EXPECT_DOUBLE_EQ(learning_rate(config, 0, 10), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(config, 9, 10), 0.1);
}

TEST(LearningRate, WarmupRisesLinearlyAndReachesBaseRateOnItsLastStep) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kConstant, 4);
  EXPECT_DOUBLE_EQ(learning_rate(config, 0, 10), 0.025);
  EXPECT_DOUBLE_EQ(learning_rate(config, 1, 10), 0.05);
  EXPECT_DOUBLE_EQ(learning_rate(config, 3, 10), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(config, 4, 10), 0.1);
}

TEST(LearningRate, StepScheduleMultipliesByGammaEveryStepSizeStepsAfterWarmup) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kStep, 2);
  EXPECT_DOUBLE_EQ(learning_rate(config, 1, 20), 0.1);   // last warm-up step
  EXPECT_DOUBLE_EQ(learning_rate(config, 2, 20), 0.1);   // first step after warm-up
  EXPECT_DOUBLE_EQ(learning_rate(config, 4, 20), 0.1);   // last step before the first decay
  EXPECT_DOUBLE_EQ(learning_rate(config, 5, 20), 0.05);  // first decay
  EXPECT_DOUBLE_EQ(learning_rate(config, 7, 20), 0.05);
  EXPECT_DOUBLE_EQ(learning_rate(config, 8, 20), 0.025);                    // second decay
  EXPECT_DOUBLE_EQ(learning_rate(config, 19, 20), 0.1 * std::pow(0.5, 5));  // last step
}

TEST(LearningRate, CosineStartsAtBaseAfterWarmupAndApproachesMinLrAtTheEnd) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kCosine, 2);
  EXPECT_DOUBLE_EQ(learning_rate(config, 0, 12), 0.05);     // warm-up
  EXPECT_DOUBLE_EQ(learning_rate(config, 2, 12), 0.1);      // progress 0
  EXPECT_NEAR(learning_rate(config, 7, 12), 0.055, 1e-15);  // progress 0.5
  const double last = 0.01 + 0.5 * 0.09 * (1.0 + std::cos(std::numbers::pi * 0.9));
  EXPECT_DOUBLE_EQ(learning_rate(config, 11, 12), last);  // progress 0.9
  EXPECT_DOUBLE_EQ(learning_rate(config, 12, 12), 0.01);  // progress 1
  EXPECT_DOUBLE_EQ(learning_rate(config, 50, 12), 0.01);  // clamped
}

TEST(LearningRate, CosineWithWarmupCoveringTheWholeRunEndsAtMinLr) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kCosine, 10);
  EXPECT_DOUBLE_EQ(learning_rate(config, 9, 10), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(config, 10, 10), 0.01);
}

TEST(LearningRate, LinearFallsInAStraightLineFromBaseAfterWarmupToMinLrAtTheEnd) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kLinear, 2);
  EXPECT_DOUBLE_EQ(learning_rate(config, 0, 12), 0.05);             // warm-up
  EXPECT_EQ(learning_rate(config, 2, 12), 0.1);                     // progress 0
  EXPECT_DOUBLE_EQ(learning_rate(config, 3, 12), 0.1 - 0.09 / 10);  // progress 0.1
  EXPECT_DOUBLE_EQ(learning_rate(config, 7, 12), 0.055);            // progress 0.5
  EXPECT_DOUBLE_EQ(learning_rate(config, 11, 12), 0.019);           // progress 0.9
  EXPECT_EQ(learning_rate(config, 12, 12), 0.01);                   // progress 1
  EXPECT_EQ(learning_rate(config, 50, 12), 0.01);                   // clamped
}

TEST(LearningRate, LinearWithWarmupCoveringTheWholeRunEndsAtMinLr) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kLinear, 10);
  EXPECT_DOUBLE_EQ(learning_rate(config, 9, 10), 0.1);
  EXPECT_EQ(learning_rate(config, 10, 10), 0.01);
}

TEST(LearningRate, WsdHoldsTheBaseRateThenDecaysLinearlyOverTheLastDecaySteps) {
  OptimizerConfig config = schedule_of(LrScheduleKind::kWsd, 2);
  config.schedule.decay_steps = 4;                          // steps 8-11 of 12 decay
  EXPECT_DOUBLE_EQ(learning_rate(config, 1, 12), 0.1);      // last warm-up step
  EXPECT_EQ(learning_rate(config, 2, 12), 0.1);             // stable
  EXPECT_EQ(learning_rate(config, 7, 12), 0.1);             // last stable step
  EXPECT_EQ(learning_rate(config, 8, 12), 0.1);             // decay progress 0
  EXPECT_DOUBLE_EQ(learning_rate(config, 9, 12), 0.0775);   // 1/4
  EXPECT_DOUBLE_EQ(learning_rate(config, 10, 12), 0.055);   // 2/4
  EXPECT_DOUBLE_EQ(learning_rate(config, 11, 12), 0.0325);  // 3/4, the last step
  EXPECT_EQ(learning_rate(config, 12, 12), 0.01);           // min_lr at total_steps
  EXPECT_EQ(learning_rate(config, 20, 12), 0.01);
}

TEST(LearningRate, WsdDecaysOverDecayFractionOfTheRunWhenDecayStepsIsZero) {
  OptimizerConfig config = schedule_of(LrScheduleKind::kWsd, 0);
  config.schedule.decay_fraction = 0.25;  // 3 of 12 steps: steps 9-11 decay
  EXPECT_EQ(learning_rate(config, 0, 12), 0.1);
  EXPECT_EQ(learning_rate(config, 9, 12), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(config, 10, 12), 0.07);
  EXPECT_DOUBLE_EQ(learning_rate(config, 11, 12), 0.04);
  EXPECT_EQ(learning_rate(config, 12, 12), 0.01);
}

TEST(LearningRate, WsdDecayStepsAreTheCountWhenSetElseTheFractionRoundedToTheNearestStep) {
  LrScheduleConfig schedule;
  schedule.decay_fraction = 0.25;
  EXPECT_EQ(wsd_decay_steps(schedule, 12), 3);
  EXPECT_EQ(wsd_decay_steps(schedule, 10), 3);  // 2.5 rounds away from zero
  EXPECT_EQ(wsd_decay_steps(schedule, 9), 2);   // 2.25
  EXPECT_EQ(wsd_decay_steps(schedule, 0), 0);
  schedule.decay_fraction = 0.1;
  EXPECT_EQ(wsd_decay_steps(schedule, 30), 3);  // 0.1 x 30 is 3.0000000000000004
  schedule.decay_steps = 7;
  EXPECT_EQ(wsd_decay_steps(schedule, 30), 7);
}

TEST(LearningRate, WsdWithNoDecayStepsHoldsTheBaseRateToTheEnd) {
  OptimizerConfig config = schedule_of(LrScheduleKind::kWsd, 1);
  config.schedule.decay_fraction = 0.1;  // 0.3 of 3 steps rounds to none
  EXPECT_EQ(learning_rate(config, 2, 3), 0.1);
  EXPECT_EQ(learning_rate(config, 3, 3), 0.01);
}

TEST(LearningRate, InverseSqrtContinuesTheWarmupPeakAsOneOverTheSquareRootOfTheStep) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kInverseSqrt, 4);
  EXPECT_DOUBLE_EQ(learning_rate(config, 0, 100), 0.025);  // warm-up
  EXPECT_DOUBLE_EQ(learning_rate(config, 3, 100), 0.1);    // its peak, step 4 of 4
  EXPECT_DOUBLE_EQ(learning_rate(config, 4, 100), 0.1 * std::sqrt(4.0 / 5.0));
  EXPECT_DOUBLE_EQ(learning_rate(config, 15, 100), 0.05);    // sqrt(4/16)
  EXPECT_DOUBLE_EQ(learning_rate(config, 63, 100), 0.025);   // sqrt(4/64)
  EXPECT_DOUBLE_EQ(learning_rate(config, 399, 100), 0.01);   // past total_steps: no end
  EXPECT_DOUBLE_EQ(learning_rate(config, 399, 1000), 0.01);  // nor dependence on it
}

TEST(LearningRate, InverseSqrtWithoutWarmupStartsAtTheBaseRate) {
  const OptimizerConfig config = schedule_of(LrScheduleKind::kInverseSqrt, 0);
  EXPECT_EQ(learning_rate(config, 0, 10), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(config, 3, 10), 0.05);
  EXPECT_DOUBLE_EQ(learning_rate(config, 99, 10), 0.01);
}

TEST(ScheduleSteps, AreTrainStepsUnlessTheScheduleSetsItsLength) {
  OptimizerConfig config = schedule_of(LrScheduleKind::kCosine, 0);
  EXPECT_EQ(schedule_steps(config, 313), 313);
  config.schedule.total_steps = 100;
  EXPECT_EQ(schedule_steps(config, 313), 100);
}

}  // namespace
}  // namespace mpipe::optim
