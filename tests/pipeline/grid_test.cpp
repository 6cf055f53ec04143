// Tests for schedule rendering: golden grid, the `mpipe schedule` report and ideal speedup.
#include "pipeline/grid.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "pipeline/schedule.h"

namespace mpipe::pipeline {
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
}  // namespace mpipe::pipeline
