// Tests for plan_trace: a plan's simulated step as a run's trace events, ops in program order at
// the simulator's times, the waits before receives, the optimizer after the last op, named as a
// run names them.
#include "train/plan_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plan/schedule.h"
#include "plan/simulator.h"

namespace mpipe::train {
namespace {

using log::TraceKind;

// The plan of `schedule` on K ranks of v chunks, M micro-batches, F = 1 s and B = 2 s (I 1, W 1)
// on every stage, rank r's chunks' optimizer phase taking `optimizer_s[r]` split over its chunks,
// the step the simulated pipeline plus the slowest rank's phase (as simulate_step adds them).
plan::PipelinePlan uniform_plan(plan::ScheduleKind schedule, int k, int v, int m,
                                const std::vector<double>& optimizer_s) {
  plan::PipelinePlan p;
  p.schedule = schedule;
  p.virtual_stages = v;
  const plan::Placement placement = plan::placement_for(schedule, k, v);
  p.stages.resize(static_cast<size_t>(k * v));
  for (int s = 0; s < k * v; ++s) {
    p.stages[static_cast<size_t>(s)].optimizer_s =
        optimizer_s[static_cast<size_t>(placement.rank_of(s))] / v;
  }
  std::vector<plan::Program> programs;
  for (int r = 0; r < k; ++r) programs.push_back(plan::make_program(schedule, k, m, r, v));
  p.timeline = plan::simulate(
      programs,
      {.forward_time = 1.0, .backward_time = 2.0, .weight_time = 1.0, .placement = placement.kind});
  p.step_s = p.timeline.makespan + *std::ranges::max_element(optimizer_s);
  p.bubble_fraction = p.timeline.bubble_fraction;
  return p;
}

struct Expected {
  TraceKind kind;
  int micro_batch;
  double start_s;
  double end_s;
};

void expect_events(const log::RankTimeline& rank, const std::vector<Expected>& expected) {
  ASSERT_EQ(rank.events.size(), expected.size()) << "rank " << rank.world_rank;
  for (size_t i = 0; i < expected.size(); ++i) {
    const log::TraceEvent& got = rank.events[i];
    SCOPED_TRACE(testing::Message() << "rank " << rank.world_rank << " event " << i << " "
                                    << log::trace_name(got.kind, got.micro_batch));
    EXPECT_EQ(got.kind, expected[i].kind);
    EXPECT_EQ(got.micro_batch, expected[i].micro_batch);
    EXPECT_DOUBLE_EQ(got.start_s, expected[i].start_s);
    EXPECT_DOUBLE_EQ(got.end_s, expected[i].end_s);
    EXPECT_EQ(got.step, 1);
  }
}

// K = 2, M = 4, 1F1B. Rank 0: F0 F1, then each B<m> on the gradient of stage 1's B<m>, which
// ends at 4, 7, 10, 13 (stage 1 runs F0 after F0's activation at 1, then B0 F1 B1 F2 B2 F3 B3 with
// no gap): it waits from 2 to 4 for B0's and from 12 to 13 for B3's; B1's arrives at 7 and B2's at
// 10, as its F2 and F3 end. The pipeline ends at 15 with rank 0's B3; the optimizer phases
// (rank 0: 0.5 s, rank 1: 1 s) start there, the step ending at 16, and rank 1 waits in the loss
// allreduce from its last op's end (13) to 15.
TEST(PlanTrace, EachRanksOpsInProgramOrderAtTheSimulatorsTimesThenTheOptimizer) {
  const plan::PipelinePlan p = uniform_plan(plan::ScheduleKind::kOneFOneB, 2, 1, 4, {0.5, 1.0});
  ASSERT_DOUBLE_EQ(p.timeline.makespan, 15.0);
  const std::vector<log::RankTimeline> ranks = plan_timelines(p);
  ASSERT_EQ(ranks.size(), 2u);
  using enum TraceKind;
  expect_events(ranks[0], {{kForward, 0, 0, 1},
                           {kForward, 1, 1, 2},
                           {kRecvGradient, 0, 2, 4},
                           {kBackward, 0, 4, 6},
                           {kForward, 2, 6, 7},
                           {kBackward, 1, 7, 9},
                           {kForward, 3, 9, 10},
                           {kBackward, 2, 10, 12},
                           {kRecvGradient, 3, 12, 13},
                           {kBackward, 3, 13, 15},
                           {kOptimizer, -1, 15, 15.5}});
  expect_events(ranks[1], {{kRecvActivation, 0, 0, 1},
                           {kForward, 0, 1, 2},
                           {kBackward, 0, 2, 4},
                           {kForward, 1, 4, 5},
                           {kBackward, 1, 5, 7},
                           {kForward, 2, 7, 8},
                           {kBackward, 2, 8, 10},
                           {kForward, 3, 10, 11},
                           {kBackward, 3, 11, 13},
                           {kLossAllreduce, -1, 13, 15},
                           {kOptimizer, -1, 15, 16}});
  for (const log::RankTimeline& rank : ranks) {
    EXPECT_EQ(rank.chunk_stages, std::vector<int>{rank.world_rank});
    EXPECT_EQ(rank.replica, 0);
  }
}

// The JSON is a run's trace.json: a process per rank named as a run names it, ops on the compute
// track and waits on the communication track in microseconds, the optimizer as `optimizer`; with
// two chunks per rank (zbv: the V), each op named with its chunk, I<m> as B<m> as the executor
// records it; otherData says what it predicts.
TEST(PlanTrace, NamesRanksAndOpsAsARunsTraceDoes) {
  const nlohmann::json one =
      plan_trace(uniform_plan(plan::ScheduleKind::kOneFOneB, 2, 1, 4, {0.5, 1.0}));
  std::vector<std::string> processes, rank1;
  for (const nlohmann::json& e : one["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.push_back(e["args"]["name"]);
    if (e["ph"] == "X" && e["pid"] == 1) rank1.push_back(e["name"]);
    if (e["ph"] == "X" && e["pid"] == 1 && e["name"] == "F3") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 10e6);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1e6);
      EXPECT_EQ(e["tid"], 0);
    }
    if (e["ph"] == "X" && e["name"] == "RA0") {
      EXPECT_EQ(e["tid"], 1);
    }
  }
  EXPECT_EQ(processes,
            (std::vector<std::string>{"rank 0: stage 0, replica 0", "rank 1: stage 1, replica 0"}));
  EXPECT_EQ(rank1, (std::vector<std::string>{"RA0", "F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3",
                                             "loss allreduce", "optimizer"}));
  EXPECT_EQ(one["otherData"]["predicted_by"], "mpipe plan");
  EXPECT_EQ(one["otherData"]["schedule"], "1f1b");
  EXPECT_DOUBLE_EQ(one["otherData"]["step_s"].get<double>(), 16.0);

  const nlohmann::json zbv = plan_trace(uniform_plan(plan::ScheduleKind::kZbv, 2, 2, 2, {1, 1}));
  std::vector<std::string> rank0;
  for (const nlohmann::json& e : zbv["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == 0) {
      EXPECT_EQ(e["args"]["name"], "rank 0: stages 0, 3; replica 0");
    }
    if (e["ph"] == "X" && e["pid"] == 0 && e["tid"] == 0) rank0.push_back(e["name"]);
  }
  // Rank 0 holds the first and the last stage: F<m>.0, F<m>.1, then B (its I) and W per chunk.
  EXPECT_EQ(std::ranges::count(rank0, "F0.0"), 1);
  EXPECT_EQ(std::ranges::count(rank0, "F1.1"), 1);
  EXPECT_EQ(std::ranges::count(rank0, "B1.1"), 1);
  EXPECT_EQ(std::ranges::count(rank0, "W0.0"), 1);
  EXPECT_EQ(std::ranges::count_if(rank0, [](const std::string& n) { return n[0] == 'I'; }), 0);
  EXPECT_EQ(rank0.size(), 2u * 2 * 3 + 1);  // F, B and W of 2 micro-batches per chunk, optimizer
}

}  // namespace
}  // namespace mpipe::train
