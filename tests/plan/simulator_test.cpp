// Tests for the timeline simulator: schedule invariants, bubble fractions and deadlock detection.
#include "plan/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "plan/schedule.h"

namespace mpipe::plan {
namespace {

constexpr ScheduleKind kKinds[] = {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB};

std::vector<Program> programs_for(ScheduleKind kind, int num_stages, int num_micro_batches) {
  std::vector<Program> programs;
  for (int s = 0; s < num_stages; ++s) {
    programs.push_back(make_program(kind, num_stages, num_micro_batches, s));
  }
  return programs;
}

constexpr Op F(int m) { return {OpKind::kForward, m}; }
constexpr Op B(int m) { return {OpKind::kBackward, m}; }
constexpr Op RA(int m) { return {OpKind::kRecvActivation, m}; }
constexpr Op SA(int m) { return {OpKind::kSendActivation, m}; }
constexpr Op RG(int m) { return {OpKind::kRecvGrad, m}; }
constexpr Op SG(int m) { return {OpKind::kSendGrad, m}; }

TEST(Simulator, BothSchedulesRunWithoutDeadlockAndWithMatchingMessageOrders) {
  for (ScheduleKind kind : kKinds) {
    for (int k = 1; k <= 8; ++k) {
      for (int m = 1; m <= 16; ++m) {
        SCOPED_TRACE(fmt::format("{} K={} M={}", to_string(kind), k, m));
        const SimulationResult result = simulate(programs_for(kind, k, m));
        EXPECT_FALSE(result.deadlocked()) << result.deadlock_report();
        EXPECT_TRUE(result.orders_match()) << result.order_mismatches.front();
        ASSERT_EQ(result.ranks.size(), static_cast<std::size_t>(k));
        for (const RankTimeline& stage : result.ranks) {
          EXPECT_EQ(stage.compute.size(), static_cast<std::size_t>(2 * m));
          EXPECT_DOUBLE_EQ(stage.busy_time, m * 3.0);
        }
      }
    }
  }
}

TEST(Simulator, GpipeKeepsAllMicroBatchesInFlight) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 16; ++m) {
      const SimulationResult result = simulate(programs_for(ScheduleKind::kGpipe, k, m));
      for (const RankTimeline& stage : result.ranks) EXPECT_EQ(stage.peak_in_flight, m);
    }
  }
}

TEST(Simulator, OneFOneBKeepsAtMostKMinusStageMicroBatchesInFlight) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 16; ++m) {
      const SimulationResult result = simulate(programs_for(ScheduleKind::kOneFOneB, k, m));
      for (int s = 0; s < k; ++s) {
        EXPECT_EQ(result.ranks[static_cast<std::size_t>(s)].peak_in_flight, std::min(k - s, m))
            << "K=" << k << " M=" << m << " stage=" << s;
      }
    }
  }
}

TEST(Simulator, GpipeBubbleFractionIsKMinusOneOverMPlusKMinusOne) {
  const SimulationOptions equal_cost{.forward_time = 1.0, .backward_time = 1.0};
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 16; ++m) {
      const SimulationResult result =
          simulate(programs_for(ScheduleKind::kGpipe, k, m), equal_cost);
      EXPECT_NEAR(result.bubble_fraction, (k - 1.0) / (m + k - 1.0), 1e-12)
          << "K=" << k << " M=" << m;
      EXPECT_DOUBLE_EQ(result.makespan, 2.0 * (m + k - 1));
    }
  }
}

TEST(Simulator, OneFOneBHasTheSameBubbleAsGpipe) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 16; ++m) {
      const double gpipe = simulate(programs_for(ScheduleKind::kGpipe, k, m)).makespan;
      const double one_f_one_b = simulate(programs_for(ScheduleKind::kOneFOneB, k, m)).makespan;
      EXPECT_DOUBLE_EQ(one_f_one_b, gpipe) << "K=" << k << " M=" << m;
    }
  }
}

// ZB-H1 with F = I = W = 1: the W ops fill all but (K-1)(F+I-W) of 1F1B's (K-1)(F+B) bubble,
// for every M >= K (with fewer micro-batches the warm-up is shorter than K-1-s forwards).
TEST(Simulator, ZbH1ShrinksOneFOneBsBubbleToKMinusOneTimeUnits) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = k; m <= 16; ++m) {
      const SimulationResult result = simulate(programs_for(ScheduleKind::kZbH1, k, m));
      ASSERT_FALSE(result.deadlocked()) << result.deadlock_report();
      ASSERT_TRUE(result.orders_match());
      EXPECT_DOUBLE_EQ(result.makespan, 3.0 * m + (k - 1)) << "K=" << k << " M=" << m;
      for (int s = 0; s < k; ++s) {
        const RankTimeline& stage = result.ranks[static_cast<std::size_t>(s)];
        EXPECT_EQ(stage.peak_in_flight, k - s);
        EXPECT_EQ(stage.peak_pending_weights, std::min(s + 1, m));
        EXPECT_DOUBLE_EQ(stage.busy_time, 3.0 * m);
      }
    }
  }
}

TEST(Simulator, ZbH1NeverDeadlocksAndIsNeverSlowerThanOneFOneB) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 16; ++m) {
      const SimulationResult zb = simulate(programs_for(ScheduleKind::kZbH1, k, m));
      ASSERT_FALSE(zb.deadlocked()) << "K=" << k << " M=" << m << " " << zb.deadlock_report();
      EXPECT_TRUE(zb.orders_match());
      EXPECT_LE(zb.makespan, simulate(programs_for(ScheduleKind::kOneFOneB, k, m)).makespan);
    }
  }
}

TEST(Simulator, WeightOpsLongerThanTheBackwardAreRefused) {
  const SimulationOptions options{.backward_time = 1.0, .weight_time = 1.5};
  EXPECT_THROW(simulate(programs_for(ScheduleKind::kZbH1, 2, 2), options), Error);
}

TEST(Simulator, SendLatencyDelaysEachStageBoundaryCrossing) {
  // Forward fill crosses K-1 boundaries, backward drain crosses them again.
  const SimulationOptions options{.forward_time = 1.0, .backward_time = 2.0, .send_latency = 0.5};
  const SimulationResult result = simulate(programs_for(ScheduleKind::kGpipe, 4, 8), options);
  EXPECT_DOUBLE_EQ(result.makespan, (8 + 4 - 1) * 3.0 + 2 * 3 * 0.5);
}

TEST(Simulator, MessagesQueueOnTheSendersLinkForTheirTransferTime) {
  // K = 2, M = 4, F = 1, B = 2, each message 3 on the link. As latency, micro-batch m's
  // activation arrives at m + 4 and the step ends at 21; on one link the activations arrive
  // at 4, 7, 10, 13, stage 1's backwards (14-22) send gradients that arrive at 19, 22, 25 and 28,
  // and stage 0's last backward ends at 30.
  const auto programs = programs_for(ScheduleKind::kGpipe, 2, 4);
  EXPECT_DOUBLE_EQ(
      simulate(programs, {.forward_time = 1.0, .backward_time = 2.0, .send_latency = 3.0}).makespan,
      21.0);
  const SimulationResult queued =
      simulate(programs, {.forward_time = 1.0, .backward_time = 2.0, .send_transfer = 3.0});
  EXPECT_DOUBLE_EQ(queued.makespan, 30.0);
  EXPECT_DOUBLE_EQ(queued.ranks[1].compute[3].start, 13.0);  // F3
}

TEST(Simulator, RecordsComputeTimesOfTwoStageGpipe) {
  const SimulationResult result = simulate(programs_for(ScheduleKind::kGpipe, 2, 2));
  ASSERT_EQ(result.ranks.size(), 2u);
  const std::vector<TimedOp>& stage1 = result.ranks[1].compute;
  ASSERT_EQ(stage1.size(), 4u);
  EXPECT_EQ(stage1[0].op, F(0));
  EXPECT_DOUBLE_EQ(stage1[0].start, 1.0);
  EXPECT_EQ(stage1[2].op, B(0));
  EXPECT_DOUBLE_EQ(stage1[2].start, 3.0);
  EXPECT_DOUBLE_EQ(stage1[2].end, 5.0);
  const std::vector<TimedOp>& stage0 = result.ranks[0].compute;
  EXPECT_EQ(stage0[2].op, B(0));
  EXPECT_DOUBLE_EQ(stage0[2].start, 5.0);  // waits for stage 1's B0
  EXPECT_DOUBLE_EQ(result.makespan, 9.0);
  EXPECT_NEAR(result.bubble_fraction, 1.0 / 3.0, 1e-12);
}

// The same timeline's idle time: each receive a rank reached before its message, from then to the
// arrival; a message already there is no wait.
TEST(Simulator, RecordsTheReceivesARankWaitsOn) {
  const SimulationResult result = simulate(programs_for(ScheduleKind::kGpipe, 2, 2));
  // Stage 1 waits for F0's activation (stage 0's F0 ends at 1); F1's is there at 2, when its F0
  // ends. Stage 0 waits from its F1's end (2) for B0's gradient (stage 1's B0 ends at 5); B1's
  // arrives at 7, when its B0 ends.
  const std::vector<TimedOp>& stage1 = result.ranks[1].waits;
  ASSERT_EQ(stage1.size(), 1u);
  EXPECT_EQ(stage1[0].op, RA(0));
  EXPECT_DOUBLE_EQ(stage1[0].start, 0.0);
  EXPECT_DOUBLE_EQ(stage1[0].end, 1.0);
  const std::vector<TimedOp>& stage0 = result.ranks[0].waits;
  ASSERT_EQ(stage0.size(), 1u);
  EXPECT_EQ(stage0[0].op, RG(0));
  EXPECT_DOUBLE_EQ(stage0[0].start, 2.0);
  EXPECT_DOUBLE_EQ(stage0[0].end, 5.0);
}

TEST(Simulator, PerStageTimesReplaceTheUniformOnes) {
  SimulationOptions options;
  options.stage_forward_times = {1.0, 3.0};
  options.stage_backward_times = {2.0, 1.0};
  const SimulationResult result = simulate(programs_for(ScheduleKind::kGpipe, 2, 2), options);
  // Stage 1: F0 [1, 4], F1 [4, 7], B0 [7, 8], B1 [8, 9]; stage 0: B0 [8, 10], B1 [10, 12].
  EXPECT_DOUBLE_EQ(result.ranks[1].compute[1].end, 7.0);
  EXPECT_DOUBLE_EQ(result.makespan, 12.0);
  EXPECT_DOUBLE_EQ(result.ranks[0].busy_time, 6.0);
  EXPECT_DOUBLE_EQ(result.ranks[1].busy_time, 8.0);
  EXPECT_NEAR(result.bubble_fraction, 1.0 - 14.0 / 24.0, 1e-12);
}

// A WB op is compute: it runs after the rank's last op, for its stage's batched weight time.
TEST(Simulator, TimesBatchedWeightGradientsAsTheRanksLastOps) {
  std::vector<Program> programs;
  for (int s = 0; s < 2; ++s) {
    programs.push_back(make_program(ScheduleKind::kGpipe, 2, 2, s, 1, WeightGrads::kBatched));
  }
  SimulationOptions options;
  options.stage_batched_weight_times = {0.5, 1.5};
  const SimulationResult result = simulate(programs, options);
  // The GPipe timeline above: stage 1's last B ends at 7, stage 0's at 9.
  const TimedOp& last1 = result.ranks[1].compute.back();
  EXPECT_EQ(last1.op.kind, OpKind::kWeightGradsBatched);
  EXPECT_DOUBLE_EQ(last1.start, 7.0);
  EXPECT_DOUBLE_EQ(last1.end, 8.5);
  EXPECT_DOUBLE_EQ(result.ranks[0].compute.back().end, 9.5);
  EXPECT_DOUBLE_EQ(result.makespan, 9.5);
  EXPECT_DOUBLE_EQ(result.ranks[0].busy_time, 6.5);
}

TEST(Simulator, RejectsPerStageTimesForAnotherNumberOfStages) {
  SimulationOptions options;
  options.stage_forward_times = {1.0, 1.0, 1.0};
  EXPECT_THROW(simulate(programs_for(ScheduleKind::kGpipe, 2, 2), options), Error);
}

TEST(Simulator, DetectsADeadlockAndNamesWhereEachStageWaits) {
  // Stage 0 waits for a gradient before sending the activation stage 1 waits for.
  const std::vector<Program> programs = {{F(0), RG(0), B(0), SA(0)}, {RA(0), F(0), B(0), SG(0)}};
  const SimulationResult result = simulate(programs);
  ASSERT_TRUE(result.deadlocked());
  ASSERT_EQ(result.stuck.size(), 2u);
  EXPECT_EQ(result.stuck[0].rank, 0);
  EXPECT_EQ(result.stuck[0].op_index, 1u);
  EXPECT_EQ(result.stuck[1].op, RA(0));
  EXPECT_EQ(result.deadlock_report(),
            "deadlock: rank 0 waits at op 1 (RG0); rank 1 waits at op 0 (RA0)");
}

TEST(Simulator, ReportsASendOrderThatDiffersFromTheReceiveOrder) {
  const std::vector<Program> programs = {{F(0), F(1), SA(1), SA(0), RG(0), B(0), RG(1), B(1)},
                                         {RA(0), F(0), RA(1), F(1), B(0), SG(0), B(1), SG(1)}};
  const SimulationResult result = simulate(programs);
  EXPECT_FALSE(result.deadlocked());
  ASSERT_EQ(result.order_mismatches.size(), 1u);
  EXPECT_EQ(result.order_mismatches[0],
            "rank 0 sends activations in order [1 0] but rank 1 receives [0 1]");
}

TEST(Simulator, RejectsCommunicationWithAStageThatDoesNotExist) {
  EXPECT_THROW(simulate({{RA(0), F(0), B(0)}}), Error);
  EXPECT_THROW(simulate({{F(0), B(0)}, {F(0), SA(0), B(0)}}), Error);
}

// Known per-op costs: F = 1 and B = 2 per block, 0.5 per block for the update, 3 per step.
BlockCosts known_costs(double transfer_s) {
  return {.forward_s = 1.0,
          .backward_s = 2.0,
          .transfer_s = transfer_s,
          .update_s = 0.5,
          .step_overhead_s = 3.0};
}

TEST(ProjectBlocks, OneStageRunsEveryMicroBatchThroughEveryBlock) {
  const BlockProjection p = project_blocks(known_costs(0.5), 8, 1, 4, 256);
  EXPECT_DOUBLE_EQ(p.pipeline_s, 4 * 8 * 3.0);
  EXPECT_DOUBLE_EQ(p.step_s, 96.0 + 8 * 0.5 + 3.0);
  EXPECT_DOUBLE_EQ(p.samples_per_s, 256 / 103.0);
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 0.0);
}

TEST(ProjectBlocks, TwoStagesFollowTheGpipeTimelineWithTransfersOnTheCriticalPath) {
  // Stage F = 4, B = 8: (M + K - 1)(F + B) = 60, plus one activation and one gradient transfer
  // of 0.5 on the critical path; each stage updates 4 blocks.
  const BlockProjection p = project_blocks(known_costs(0.5), 8, 2, 4, 256);
  EXPECT_DOUBLE_EQ(p.pipeline_s, 61.0);
  EXPECT_DOUBLE_EQ(p.step_s, 61.0 + 4 * 0.5 + 3.0);
  EXPECT_NEAR(p.bubble_fraction, 1.0 - 2 * 48.0 / (2 * 61.0), 1e-12);
}

TEST(ProjectBlocks, TheFirstStagesTakeTheExtraBlocksAndTheLastTheHead) {
  BlockCosts costs = known_costs(0.0);
  costs.head_forward_s = 10.0;  // stage 1: 4 blocks + head = 14 forward; stage 0: 5 blocks = 5
  // M = 1: F0 on stage 0 (5), F0 on stage 1 (14), B0 on stage 1 (8), B0 on stage 0 (10).
  const BlockProjection p = project_blocks(costs, 9, 2, 1, 64);
  EXPECT_DOUBLE_EQ(p.pipeline_s, 5.0 + 14.0 + 8.0 + 10.0);
  EXPECT_DOUBLE_EQ(p.step_s, 37.0 + 5 * 0.5 + 3.0);
  EXPECT_THROW(project_blocks(costs, 2, 3, 1, 64), Error);
}

// Two ranks of two chunks, 8 blocks: 2 blocks a stage (F = 2, B = 4 per chunk op). The
// interleaved step at M = 4 is (v·M + K - 1)(F + B) = 9 x 6 = 54 without transfers, against
// 1F1B's (M + K - 1) x 12 = 60 on the same ranks; each rank updates its 4 blocks.
TEST(ProjectBlocks, VirtualStagesSplitEachRanksBlocksIntoChunks) {
  const BlockProjection p =
      project_blocks(known_costs(0.0), 8, 2, 4, 256, ScheduleKind::kInterleaved, 2);
  EXPECT_DOUBLE_EQ(p.pipeline_s, 54.0);
  EXPECT_DOUBLE_EQ(p.step_s, 54.0 + 4 * 0.5 + 3.0);
  EXPECT_NEAR(p.bubble_fraction, 1.0 / 9.0, 1e-12);
  EXPECT_DOUBLE_EQ(
      project_blocks(known_costs(0.0), 8, 2, 4, 256, ScheduleKind::kOneFOneB).pipeline_s, 60.0);
  EXPECT_THROW(project_blocks(known_costs(0.0), 3, 2, 4, 256, ScheduleKind::kInterleaved, 2),
               Error);
}

}  // namespace
}  // namespace mpipe::plan
