// Tests for receives_posted: the receives the executor posts ahead, and that the memory walk
// counts the same ones.
#include "plan/receive_posting.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "plan/program_memory.h"
#include "plan/rank_messages.h"
#include "plan/schedule.h"

namespace mpipe::plan {
namespace {

// GPipe's stage 1 of 2 (RA0 F0 RA1 F1 RA2 F2 B0 SG0 B1 SG1 B2 SG2): two receives posted before
// the first op, the third once RA0 is consumed; one ahead, each after the one before.
TEST(ReceivesPosted, KeepsTheNextReceivesPostedBeyondThoseConsumed) {
  const Program program = make_program(ScheduleKind::kGpipe, 2, 3, 1);
  EXPECT_EQ(receives_posted(program, kReceivesAhead),
            (std::vector<int>{2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(receives_posted(program, 1), (std::vector<int>{1, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3}));
  // With none ahead, each receive is posted at its own op.
  EXPECT_EQ(receives_posted(program, 0), (std::vector<int>{1, 1, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3}));
}

// Every rank's program of every schedule: the walk's posted receives at each op are the ones
// step_messages gives (what Executor::train_step posts), and each receive is posted by its op.
TEST(ReceivesPosted, AreTheReceivesTheMemoryWalkHoldsOnEverySchedule) {
  const std::pair<ScheduleKind, int> schedules[] = {
      // (schedule, chunks per rank)
      {ScheduleKind::kGpipe, 1}, {ScheduleKind::kOneFOneB, 1},
      {ScheduleKind::kZbH1, 1},  {ScheduleKind::kInterleaved, 2},
      {ScheduleKind::kZbv, 2},   {ScheduleKind::kInterleaved, 3}};
  int checked = 0;
  for (const auto& [kind, v] : schedules) {
    for (int k = 1; k <= 5; ++k) {
      for (int m : {1, 2, 3, 4, 8, 10}) {
        if (schedule_shape_problem(kind, k, m, v)) continue;
        const Placement placement = placement_for(kind, k, v);
        std::vector<Program> programs;
        for (int r = 0; r < k; ++r) programs.push_back(make_program(kind, k, m, r, v));
        for (int r = 0; r < k; ++r) {
          SCOPED_TRACE(fmt::format("{} K={} M={} rank {}", to_string(kind), k, m, r));
          const Program& program = programs[static_cast<size_t>(r)];
          const RankMessages messages =
              step_messages(programs, placement).at(static_cast<size_t>(r));
          const std::vector<int>& posted = messages.receives_posted;
          const std::vector<std::vector<size_t>> held = held_messages(program, messages);
          std::vector<size_t> receives;
          for (size_t i = 0; i < program.size(); ++i) {
            if (is_receive(program[i].kind)) receives.push_back(i);
          }
          int consumed = 0;
          for (size_t i = 0; i < program.size(); ++i) {
            std::vector<size_t> walk;
            std::ranges::copy_if(held[i], std::back_inserter(walk),
                                 [&](size_t op) { return is_receive(program[op].kind); });
            const std::vector<size_t> executor(receives.begin() + consumed,
                                               receives.begin() + posted[i]);
            EXPECT_EQ(walk, executor) << "op " << i;
            if (is_receive(program[i].kind)) {
              EXPECT_GT(posted[i], consumed) << "op " << i << " receives before it is posted";
              ++consumed;
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace mpipe::plan
