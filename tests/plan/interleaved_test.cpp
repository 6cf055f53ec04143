// Tests for the interleaved schedule and virtual-stage placement: PyTorch's op order as golden
// programs, peers across chunks, the simulator's bubble and the shape rules.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "plan/grid.h"
#include "plan/placement.h"
#include "plan/schedule.h"
#include "plan/simulator.h"

namespace mpipe::plan {
namespace {

Program interleaved(int k, int v, int m, int rank) {
  return make_program(ScheduleKind::kInterleaved, k, m, rank, v);
}

std::vector<Program> interleaved_programs(int k, int v, int m) {
  std::vector<Program> programs;
  for (int r = 0; r < k; ++r) programs.push_back(interleaved(k, v, m, r));
  return programs;
}

// The compute ops of a program, "F0.1" style.
std::string compute_ops(const Program& program) {
  std::string text;
  for (const Op& op : program) {
    if (op.kind != OpKind::kForward && op.kind != OpKind::kBackward) continue;
    if (!text.empty()) text += ' ';
    text += to_string(op, true);
  }
  return text;
}

// PyTorch's ScheduleInterleaved1F1B (torch/distributed/pipelining/schedules.py) lists each
// rank's actions as <stage><F|B><micro-batch>, stage = rank + chunk·K; these are its orders with
// the padding dropped and each stage written as its chunk (F<m>.<chunk>).
TEST(Interleaved, TwoRanksTwoChunksFollowPyTorchsOrder) {
  EXPECT_EQ(compute_ops(interleaved(2, 2, 4, 0)),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(compute_ops(interleaved(2, 2, 4, 1)),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(compute_ops(interleaved(2, 2, 8, 0)),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 F4.0 B2.1 F5.0 B3.1 "
            "F4.1 B2.0 F5.1 B3.0 F6.0 B4.1 F7.0 B5.1 F6.1 B4.0 F7.1 B5.0 B6.1 B7.1 B6.0 B7.0");
  EXPECT_EQ(compute_ops(interleaved(2, 2, 8, 1)),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 F4.0 B2.0 "
            "F5.0 B3.0 F4.1 B4.1 F5.1 B5.1 F6.0 B4.0 F7.0 B5.0 F6.1 B6.1 F7.1 B7.1 B6.0 B7.0");
}

TEST(Interleaved, FourRanksTwoChunksFollowPyTorchsOrder) {
  // M = K: ranks 0 and 1 warm up with every forward (the warm-up is capped at v·M).
  EXPECT_EQ(compute_ops(interleaved(4, 2, 4, 0)),
            "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0");
  EXPECT_EQ(compute_ops(interleaved(4, 2, 4, 1)), compute_ops(interleaved(4, 2, 4, 0)));
  EXPECT_EQ(compute_ops(interleaved(4, 2, 4, 2)),
            "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0");
  EXPECT_EQ(compute_ops(interleaved(4, 2, 4, 3)),
            "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 B0.0 B1.0 B2.0 B3.0");
  const std::vector<std::string> eight = {
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 "
      "F6.1 B0.0 F7.1 B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 B0.1 F5.0 B1.1 F6.0 B2.1 F7.0 B3.1 F4.1 B0.0 "
      "F5.1 B1.0 F6.1 B2.0 F7.1 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.0 B2.1 F5.0 B3.1 F6.0 B0.0 F7.0 B1.0 "
      "F4.1 B2.0 F5.1 B3.0 F6.1 B4.1 F7.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 "
      "F7.0 B3.0 F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0"};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(compute_ops(interleaved(4, 2, 8, r)), eight[r]) << r;
}

// The messages around the compute ops: rank 0 chunk 0 (stage 0) receives no activation, rank 1
// chunk 1 (the last stage, 3) sends none; each chunk's messages carry its chunk.
TEST(Interleaved, SurroundsEachComputeOpWithItsChunksMessages) {
  EXPECT_EQ(program_to_string(interleaved(2, 2, 2, 0)),
            "F0.0 SA0.0 F1.0 SA1.0 RA0.1 F0.1 SA0.1 RA1.1 F1.1 SA1.1 RG0.1 B0.1 SG0.1 RG1.1 B1.1 "
            "SG1.1 RG0.0 B0.0 RG1.0 B1.0");
  EXPECT_EQ(program_to_string(interleaved(2, 2, 2, 1)),
            "RA0.0 F0.0 SA0.0 RA1.0 F1.0 SA1.0 RA0.1 F0.1 B0.1 SG0.1 RA1.1 F1.1 B1.1 SG1.1 RG0.0 "
            "B0.0 SG0.0 RG1.0 B1.0 SG1.0");
}

// Every chunk is a stage like any other: each op kind once per micro-batch in ascending order
// (the rule that fixes the weight-gradient accumulation order), its backward after its forward.
TEST(Interleaved, EveryChunkRunsEachMicroBatchOnceInAscendingOrder) {
  for (int k = 1; k <= 5; ++k) {
    for (int v = 2; v <= 4; ++v) {
      for (int m = k; m <= 4 * k; m += k) {
        for (int r = 0; r < k; ++r) {
          SCOPED_TRACE(fmt::format("K={} v={} M={} rank={}", k, v, m, r));
          std::map<std::pair<int, OpKind>, std::vector<int>> order;
          std::map<std::pair<int, int>, bool> forwarded;
          for (const Op& op : interleaved(k, v, m, r)) {
            ASSERT_TRUE(op.chunk >= 0 && op.chunk < v);
            order[{op.chunk, op.kind}].push_back(op.micro_batch);
            if (op.kind == OpKind::kForward) forwarded[{op.chunk, op.micro_batch}] = true;
            if (op.kind == OpKind::kBackward) {
              const bool was_forwarded = forwarded[{op.chunk, op.micro_batch}];
              EXPECT_TRUE(was_forwarded) << to_string(op, true);
            }
          }
          const auto micro_batches = [&](int chunk, OpKind kind) { return order[{chunk, kind}]; };
          std::vector<int> all(static_cast<size_t>(m));
          for (int i = 0; i < m; ++i) all[static_cast<size_t>(i)] = i;
          for (int c = 0; c < v; ++c) {
            const int stage = r + c * k;
            const std::vector<int> none;
            EXPECT_EQ(micro_batches(c, OpKind::kForward), all);
            EXPECT_EQ(micro_batches(c, OpKind::kBackward), all);
            EXPECT_EQ(micro_batches(c, OpKind::kRecvActivation), stage > 0 ? all : none);
            EXPECT_EQ(micro_batches(c, OpKind::kSendGrad), stage > 0 ? all : none);
            EXPECT_EQ(micro_batches(c, OpKind::kSendActivation), stage < k * v - 1 ? all : none);
            EXPECT_EQ(micro_batches(c, OpKind::kRecvGrad), stage < k * v - 1 ? all : none);
          }
        }
      }
    }
  }
}

// At F = 1 and B = 2 per chunk op (each chunk 1/v of a rank's layers), the fill and drain take
// (K-1)(F+B): the bubble is (K-1)/(v·M) of the useful time, (K-1)/(v·M + K-1) of the step; the
// simulator finds no deadlock and every message received in the order it was sent.
TEST(Interleaved, BubbleShrinksWithTheChunksAtEqualOpCosts) {
  for (int k = 2; k <= 6; ++k) {
    for (int v = 2; v <= 4; ++v) {
      for (int m = k; m <= 4 * k; m += k) {
        SCOPED_TRACE(fmt::format("K={} v={} M={}", k, v, m));
        const SimulationResult result = simulate(interleaved_programs(k, v, m));
        ASSERT_FALSE(result.deadlocked()) << result.deadlock_report();
        EXPECT_TRUE(result.orders_match()) << fmt::format("{}", result.order_mismatches.front());
        EXPECT_EQ(result.virtual_stages, v);
        EXPECT_DOUBLE_EQ(result.makespan, 3.0 * (v * m + k - 1));
        EXPECT_NEAR(result.bubble_fraction, (k - 1.0) / (v * m + k - 1.0), 1e-12);
      }
    }
  }
}

// The simulator takes each chunk's time from its global stage r + c·K.
TEST(Interleaved, SimulatorTimesEachChunkAsItsGlobalStage) {
  SimulationOptions options;
  // Stages 0 and 1 (chunk 0 of ranks 0 and 1) twice as slow as stages 2 and 3.
  options.stage_forward_times = {2, 2, 1, 1};
  options.stage_backward_times = {4, 4, 2, 2};
  options.stage_weight_times = {0, 0, 0, 0};
  const SimulationResult result = simulate(interleaved_programs(2, 2, 2), options);
  ASSERT_FALSE(result.deadlocked());
  EXPECT_DOUBLE_EQ(result.ranks[0].busy_time, 2 * (2 + 4) + 2 * (1 + 2));
  options.stage_forward_times = {1, 1};  // one per rank is not one per stage
  EXPECT_THROW(simulate(interleaved_programs(2, 2, 2), options), Error);
}

TEST(Interleaved, DescribesTheGridWithChunksAndTheBoundItMeets) {
  const std::string text = describe_schedule(ScheduleKind::kInterleaved, 2, 4, 2);
  EXPECT_EQ(text.rfind("interleaved schedule: 2 ranks of 2 chunks (4 stages: chunk c of rank r is "
                       "stage r + c*2), 4 micro-batches, F = 1 and B = 2 time units per chunk\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("rank 0 F0.0 F1.0 F0.1 F1.1 F2.0    . B0.1 B0.1 F3.0 B1.1 B1.1 F2.1 B0.0 "
                      "B0.0 F3.1 B1.0 B1.0    . B2.1 B2.1    . B3.1 B3.1 B2.0 B2.0 B3.0 B3.0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 1    . F0.0 F1.0 F0.1 B0.1 B0.1 F1.1 B1.1 B1.1 F2.0 B0.0 B0.0 F3.0 "
                      "B1.0 B1.0 F2.1 B2.1 B2.1 F3.1 B3.1 B3.1 B2.0 B2.0 B3.0 B3.0    .    .\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("makespan: 27 time units\n"), std::string::npos) << text;
  // 2 x 8 / (8 + 1): each rank's 2 chunks over 8 slots with 1 slot of fill and drain.
  EXPECT_NE(text.find("ideal speedup over one rank: 1.78x (K*v*M/(v*M+K-1))\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("bubble fraction: 0.111 (GPipe bound (K-1)/(M+K-1) = 0.200; with v chunks "
                      "(K-1)/(v*M+K-1) = 0.111)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("peak in-flight micro-batches per rank (a micro-batch once per chunk): 5 3\n"),
      std::string::npos)
      << text;
}

TEST(Interleaved, RefusesShapesItCannotRun) {
  using Setting = ScheduleShapeProblem::Setting;
  const auto problem = schedule_shape_problem(ScheduleKind::kInterleaved, 4, 6, 2);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->setting, Setting::kMicroBatches);
  EXPECT_EQ(problem->message, "interleaved needs a multiple of the pipeline ranks (4), got 6");
  const auto one_chunk = schedule_shape_problem(ScheduleKind::kInterleaved, 4, 8, 1);
  ASSERT_TRUE(one_chunk);
  EXPECT_EQ(one_chunk->setting, Setting::kVirtualStages);
  EXPECT_EQ(one_chunk->message,
            "interleaved needs 2 or more chunks per rank, got 1; with one chunk per rank use 1f1b");
  const auto chunks = schedule_shape_problem(ScheduleKind::kZbH1, 4, 8, 2);
  ASSERT_TRUE(chunks);
  EXPECT_EQ(chunks->setting, Setting::kVirtualStages);
  EXPECT_EQ(chunks->message, "2 chunks per rank need the interleaved or zbv schedule, got zb_h1");
  EXPECT_FALSE(schedule_shape_problem(ScheduleKind::kInterleaved, 4, 8, 2));
  EXPECT_FALSE(schedule_shape_problem(ScheduleKind::kGpipe, 4, 6, 1));
  EXPECT_THROW(interleaved(4, 2, 6, 0), Error);
  EXPECT_THROW(make_program(ScheduleKind::kOneFOneB, 4, 8, 0, 2), Error);
  EXPECT_EQ(parse_schedule_kind("interleaved"), ScheduleKind::kInterleaved);
}

TEST(Placement, ChunkCOfRankRIsStageRPlusCTimesK) {
  const Placement placement{.num_ranks = 4, .virtual_stages = 2};
  EXPECT_EQ(placement.num_stages(), 8);
  EXPECT_EQ(placement.stage_of(1, 1), 5);
  EXPECT_EQ(placement.rank_of(5), 1);
  EXPECT_EQ(placement.chunk_of(5), 1);
  EXPECT_TRUE(placement.is_first(0, 0));
  EXPECT_FALSE(placement.is_first(0, 1));
  EXPECT_TRUE(placement.is_last(3, 1));
  EXPECT_FALSE(placement.is_last(3, 0));
}

TEST(Placement, PeersAreTheNextAndPreviousStagesAcrossChunks) {
  const Placement placement{.num_ranks = 4, .virtual_stages = 2};
  // Stage 1 -> 2 within chunk 0; stage 3 (rank 3 chunk 0) -> stage 4 (rank 0 chunk 1).
  EXPECT_EQ(peer_of({OpKind::kSendActivation, 0, 0}, 1, placement), (Peer{2, 0}));
  EXPECT_EQ(peer_of({OpKind::kSendActivation, 0, 0}, 3, placement), (Peer{0, 1}));
  EXPECT_EQ(peer_of({OpKind::kRecvGrad, 0, 0}, 3, placement), (Peer{0, 1}));
  EXPECT_EQ(peer_of({OpKind::kRecvActivation, 0, 1}, 0, placement), (Peer{3, 0}));
  EXPECT_EQ(peer_of({OpKind::kSendGrad, 0, 1}, 0, placement), (Peer{3, 0}));
  // One chunk per rank: the neighbours at s ± 1, as before.
  const Placement plain{.num_ranks = 3, .virtual_stages = 1};
  EXPECT_EQ(peer_of({OpKind::kSendActivation, 2}, 1, plain), (Peer{2, 0}));
  EXPECT_EQ(peer_of({OpKind::kRecvActivation, 2}, 1, plain), (Peer{0, 0}));
  // No stage before the first or after the last; compute ops have no peer.
  EXPECT_THROW(peer_of({OpKind::kRecvActivation, 0, 0}, 0, placement), Error);
  EXPECT_THROW(peer_of({OpKind::kSendActivation, 0, 1}, 3, placement), Error);
  EXPECT_THROW(peer_of({OpKind::kForward, 0, 0}, 0, placement), Error);
}

}  // namespace
}  // namespace mpipe::plan
