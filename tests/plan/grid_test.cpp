// Tests for schedule rendering: golden grid, the `mpipe schedule` report and ideal speedup.
#include "plan/grid.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "plan/schedule.h"

namespace mpipe::plan {
namespace {

SimulationResult simulate_schedule(ScheduleKind kind, int num_stages, int num_micro_batches) {
  std::vector<Program> programs;
  for (int s = 0; s < num_stages; ++s) {
    programs.push_back(make_program(kind, num_stages, num_micro_batches, s));
  }
  return simulate(programs);
}

TEST(Grid, RendersTwoStageGpipeAsGolden) {
  EXPECT_EQ(render_grid(simulate_schedule(ScheduleKind::kGpipe, 2, 2)),
            "time     0  1  2  3  4  5  6  7  8\n"
            "stage 0 F0 F1  .  .  . B0 B0 B1 B1\n"
            "stage 1  . F0 F1 B0 B0 B1 B1  .  .\n");
}

TEST(Grid, RendersThreeStageOneFOneBAsGolden) {
  EXPECT_EQ(render_grid(simulate_schedule(ScheduleKind::kOneFOneB, 3, 4)),
            "time     0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17\n"
            "stage 0 F0 F1 F2  .  .  .  . B0 B0 F3 B1 B1  . B2 B2  . B3 B3\n"
            "stage 1  . F0 F1  .  . B0 B0 F2 B1 B1 F3 B2 B2  . B3 B3  .  .\n"
            "stage 2  .  . F0 B0 B0 F1 B1 B1 F2 B2 B2 F3 B3 B3  .  .  .  .\n");
}

TEST(Grid, WidensCellsForTwoDigitMicroBatches) {
  const std::string grid = render_grid(simulate_schedule(ScheduleKind::kGpipe, 1, 12));
  EXPECT_NE(grid.find("  F9 F10 F11"), std::string::npos) << grid;
}

TEST(Grid, CountsOneStageAndOneMicroBatchInTheSingular) {
  const std::string text = describe_schedule(ScheduleKind::kGpipe, 1, 1);
  EXPECT_EQ(text.rfind("gpipe schedule: 1 stage, 1 micro-batch, F = ", 0), 0u) << text;
}

TEST(Grid, DescribesFourStagesEightMicroBatches) {
  const std::string text = describe_schedule(ScheduleKind::kGpipe, 4, 8);
  EXPECT_EQ(text.rfind("gpipe schedule: 4 stages, 8 micro-batches", 0), 0u) << text;
  EXPECT_NE(text.find("stage 3"), std::string::npos);
  EXPECT_NE(text.find("makespan: 33 time units"), std::string::npos) << text;
  EXPECT_NE(text.find("bubble fraction: 0.273"), std::string::npos) << text;
  EXPECT_NE(text.find("peak in-flight micro-batches per stage: 8 8 8 8"), std::string::npos);
  EXPECT_NE(text.find("ideal speedup over one stage: 2.91x"), std::string::npos) << text;
  const std::string one_f_one_b = describe_schedule(ScheduleKind::kOneFOneB, 4, 8);
  EXPECT_NE(one_f_one_b.find("peak in-flight micro-batches per stage: 4 3 2 1"), std::string::npos)
      << one_f_one_b;
}

// `mpipe schedule --schedule zb_h1 --stages 4 --micro-batches 8`: W ops fill 1F1B's cool-down
// bubble, from (K-1)(F+B) = 9 of 33 time units to (K-1)(F+I-W) = 3 of 27.
TEST(Grid, DescribesZbH1WithWeightOpsAndItsSmallerBubble) {
  const std::string text = describe_schedule(ScheduleKind::kZbH1, 4, 8);
  EXPECT_EQ(text.rfind("zb_h1 schedule: 4 stages, 8 micro-batches, F = 1, I = 1 and W = 1 time "
                       "units (I + W = B = 2)\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("stage 0 F0 F1 F2 F3  .  .  . I0 W0 F4 I1 W1 F5 I2 W2 F6 I3 W3 F7 I4 W4 I5 "
                      "W5 I6 W6 I7 W7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stage 3  .  .  . F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 F5 I5 W2 F6 I6 W3 F7 "
                      "I7 W4 W5 W6 W7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("makespan: 27 time units"), std::string::npos) << text;
  EXPECT_NE(text.find("bubble fraction: 0.111"), std::string::npos) << text;
  EXPECT_NE(text.find("peak in-flight micro-batches per stage: 4 3 2 1"), std::string::npos);
  EXPECT_NE(text.find("peak micro-batches between I and W per stage: 1 2 3 4"), std::string::npos);
  // The printed bubble is the simulator's.
  EXPECT_NEAR(simulate_schedule(ScheduleKind::kZbH1, 4, 8).bubble_fraction, 3.0 / 27.0, 1e-12);
}

TEST(Grid, DescribeRejectsInvalidSizes) {
  EXPECT_THROW(describe_schedule(ScheduleKind::kGpipe, 0, 8), Error);
  EXPECT_THROW(describe_schedule(ScheduleKind::kGpipe, 4, 0), Error);
}

TEST(IdealSpeedup, IsKMOverMPlusKMinusOne) {
  EXPECT_DOUBLE_EQ(ideal_speedup(1, 5), 1.0);
  EXPECT_DOUBLE_EQ(ideal_speedup(4, 8), 32.0 / 11.0);
  EXPECT_DOUBLE_EQ(ideal_speedup(4, 1), 1.0);
  EXPECT_THROW(ideal_speedup(0, 1), Error);
}

}  // namespace
}  // namespace mpipe::plan
