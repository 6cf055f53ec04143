// Tests for learning_rate: warm-up and the constant, step and cosine schedules at their
// boundary steps.
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

TEST(ScheduleSteps, AreTrainStepsUnlessTheScheduleSetsItsLength) {
  OptimizerConfig config = schedule_of(LrScheduleKind::kCosine, 0);
  EXPECT_EQ(schedule_steps(config, 313), 313);
  config.schedule.total_steps = 100;
  EXPECT_EQ(schedule_steps(config, 313), 100);
}

}  // namespace
}  // namespace mpipe::optim
