// MeasuredBalanceSchedule: checks balance_after steps after the process's first step, then every
// balance_every steps.
#include "train/measured_balance_schedule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace mpipe::train {
namespace {

// The steps in [1, last] after which `schedule` is due.
std::vector<int64_t> due_steps(MeasuredBalanceSchedule& schedule, int64_t first, int64_t last) {
  std::vector<int64_t> due;
  for (int64_t done = first + 1; done <= last; ++done) {
    if (schedule.due(done)) due.push_back(done);
  }
  return due;
}

TEST(MeasuredBalanceSchedule, AFreshRunChecksAfterBalanceAfterStepsOnly) {
  MeasuredBalanceSchedule schedule(3, 0);
  schedule.start_at(0);
  EXPECT_EQ(due_steps(schedule, 0, 20), std::vector<int64_t>{3});
}

TEST(MeasuredBalanceSchedule, AFreshRunChecksAgainEveryBalanceEverySteps) {
  MeasuredBalanceSchedule schedule(3, 2);
  schedule.start_at(0);
  EXPECT_EQ(due_steps(schedule, 0, 9), (std::vector<int64_t>{3, 5, 7, 9}));
}

TEST(MeasuredBalanceSchedule, ARunResumedPastBalanceAfterMeasuresAgainFromItsFirstStep) {
  MeasuredBalanceSchedule schedule(3, 0);
  schedule.start_at(5);
  EXPECT_EQ(due_steps(schedule, 5, 20), std::vector<int64_t>{8});
}

TEST(MeasuredBalanceSchedule, ARunResumedBeforeBalanceAfterStillMeasuresBalanceAfterSteps) {
  MeasuredBalanceSchedule schedule(3, 4);
  schedule.start_at(2);
  EXPECT_EQ(due_steps(schedule, 2, 13), (std::vector<int64_t>{5, 9, 13}));
}

}  // namespace
}  // namespace mpipe::train
