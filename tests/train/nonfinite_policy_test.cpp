// Tests of the train.on_nonfinite policy: stop at once, or skip until too many in a row.
#include "train/nonfinite_policy.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace mpipe::train {
namespace {

StepReport finite_step() { return {}; }
StepReport nonfinite_step() {
  StepReport report;
  report.finite = false;
  report.nonfinite = "step 7: loss is nan";
  return report;
}

std::string error_of(NonFiniteSteps& steps, const StepReport& report) {
  try {
    steps.record(report, false);
  } catch (const AgreedError& e) {
    EXPECT_EQ(e.exit_code(), 1);
    return e.what();
  }
  return "(no error)";
}

TEST(NonFiniteSteps, StopEndsTheRunAtTheFirstNonFiniteStep) {
  const TrainConfig config;  // on_nonfinite: stop
  NonFiniteSteps steps(config);
  EXPECT_EQ(error_of(steps, finite_step()), "(no error)");
  EXPECT_EQ(error_of(steps, nonfinite_step()),
            "step 7: loss is nan; stopped (train.on_nonfinite: stop; 'skip' drops such steps "
            "instead)");
}

TEST(NonFiniteSteps, SkipCountsStepsAndStopsAfterTooManyInARow) {
  TrainConfig config;
  config.on_nonfinite = OnNonFinite::kSkip;
  config.max_skips_in_a_row = 3;
  NonFiniteSteps steps(config);
  EXPECT_EQ(error_of(steps, nonfinite_step()), "(no error)");
  EXPECT_EQ(error_of(steps, nonfinite_step()), "(no error)");
  EXPECT_EQ(error_of(steps, finite_step()), "(no error)");  // a finite step resets the run
  EXPECT_EQ(error_of(steps, nonfinite_step()), "(no error)");
  EXPECT_EQ(error_of(steps, nonfinite_step()), "(no error)");
  EXPECT_EQ(steps.total(), 4);
  EXPECT_EQ(error_of(steps, nonfinite_step()),
            "step 7: loss is nan; stopped after 3 non-finite steps in a row "
            "(train.max_skips_in_a_row: 3)");
}

}  // namespace
}  // namespace mpipe::train
