// Tests for step_deadlock and receives_ahead: every schedule's programs run to their end under
// the executor's blocking rules with the receives rank_messages posts, and a step that would wait
// forever is named.
#include "plan/step_progress.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/rank_messages.h"
#include "plan/receive_posting.h"
#include "plan/schedule.h"

namespace mpipe::plan {
namespace {

std::vector<Program> programs_of(ScheduleKind kind, int k, int m, int v) {
  std::vector<Program> programs;
  for (int r = 0; r < k; ++r) programs.push_back(make_program(kind, k, m, r, v));
  return programs;
}

// ZB-V at K = 5, M = 8 with two receives posted ahead (what every step posted before
// receives_ahead): rank 1's warm-up sends 7 activations down while rank 2 consumes 5 before it
// waits for rank 1's first chunk-1 gradient, so rank 1 waits in its 9th send for a receive rank 2
// has not posted: the hang seen at K = 8, M = 32 on 16 cores. Three ahead still hang; four run.
TEST(StepDeadlock, NamesWhereZbvWaitedForeverWithTwoReceivesAhead) {
  const std::vector<Program> programs = programs_of(ScheduleKind::kZbv, 5, 8, 2);
  const Placement placement = placement_for(ScheduleKind::kZbv, 5, 2);
  EXPECT_EQ(step_deadlock(programs, placement, 2),
            "rank 0 waits at RA2.1 for rank 1 to send; rank 1 waits at SG0.1 for rank 2 to post "
            "the receive of its send 9 of the step; rank 2 waits at RG1.1 for rank 1 to send; "
            "rank 3 waits at RG1.1 for rank 2 to send; rank 4 waits at RG1.1 for rank 3 to send");
  EXPECT_NE(step_deadlock(programs, placement, 3), std::nullopt);
  EXPECT_EQ(step_deadlock(programs, placement, 4), std::nullopt);
  EXPECT_EQ(receives_ahead(programs, placement), 4);
  EXPECT_EQ(step_messages(programs, placement).at(1).receives_ahead, 4);
}

// The other schedules keep kReceivesAhead; so does ZB-V up to K = 4, where it ran before.
TEST(StepDeadlock, TwoReceivesAheadSufficeBelowZbvAtFiveRanks) {
  for (const auto& [kind, v] : {std::pair{ScheduleKind::kGpipe, 1},
                                {ScheduleKind::kOneFOneB, 1},
                                {ScheduleKind::kZbH1, 1},
                                {ScheduleKind::kInterleaved, 2}}) {
    EXPECT_EQ(receives_ahead(programs_of(kind, 8, 32, v), placement_for(kind, 8, v)),
              kReceivesAhead)
        << to_string(kind);
  }
  EXPECT_EQ(receives_ahead(programs_of(ScheduleKind::kZbv, 4, 32, 2),
                           placement_for(ScheduleKind::kZbv, 4, 2)),
            kReceivesAhead);
  EXPECT_GT(receives_ahead(programs_of(ScheduleKind::kZbv, 8, 32, 2),
                           placement_for(ScheduleKind::kZbv, 8, 2)),
            kReceivesAhead);
}

// Every schedule at K = 1..8 and M = 1..33 (every M a shape allows), one chunk or more, with the
// receives rank_messages posts ahead.
TEST(StepDeadlock, NoScheduleWaitsForeverAtAnyShape) {
  const std::pair<ScheduleKind, int> schedules[] = {
      // (schedule, chunks per rank)
      {ScheduleKind::kGpipe, 1}, {ScheduleKind::kOneFOneB, 1},
      {ScheduleKind::kZbH1, 1},  {ScheduleKind::kInterleaved, 2},
      {ScheduleKind::kZbv, 2},   {ScheduleKind::kInterleaved, 3}};
  int checked = 0;
  for (const auto& [kind, v] : schedules) {
    for (int k = 1; k <= 8; ++k) {
      for (int m = 1; m <= 33; ++m) {
        if (schedule_shape_problem(kind, k, m, v)) continue;
        const std::vector<Program> programs = programs_of(kind, k, m, v);
        const Placement placement = placement_for(kind, k, v);
        const std::optional<std::string> stall =
            step_deadlock(programs, placement, receives_ahead(programs, placement));
        EXPECT_EQ(stall, std::nullopt)
            << fmt::format("{} K={} M={} v={}", to_string(kind), k, m, v);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 800);
}

}  // namespace
}  // namespace mpipe::plan
