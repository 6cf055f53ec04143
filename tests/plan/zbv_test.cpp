// Tests for the ZB-V schedule and the V placement: PyTorch's op order as golden programs, the
// messages of the V (rank K-1's chunk 0 to its chunk 1), the simulator's bubble and the v rule.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "plan/grid.h"
#include "plan/placement.h"
#include "plan/receive_posting.h"
#include "plan/schedule.h"
#include "plan/simulator.h"

namespace mpipe::plan {
namespace {

Program zbv(int k, int m, int rank) { return make_program(ScheduleKind::kZbv, k, m, rank, 2); }

std::vector<Program> zbv_programs(int k, int m) {
  std::vector<Program> programs;
  for (int r = 0; r < k; ++r) programs.push_back(zbv(k, m, r));
  return programs;
}

SimulationResult simulate_zbv(int k, int m, SimulationOptions options = {}) {
  options.placement = PlacementKind::kV;
  return simulate(zbv_programs(k, m), options);
}

// The compute ops of a program, "F0.1" style.
std::string compute_ops(const Program& program) {
  std::string text;
  for (const Op& op : program) {
    if (op.kind != OpKind::kForward && op.kind != OpKind::kBackwardInput &&
        op.kind != OpKind::kBackwardWeight) {
      continue;
    }
    if (!text.empty()) text += ' ';
    text += to_string(op, true);
  }
  return text;
}

// PyTorch's ScheduleZBVZeroBubble (torch/distributed/pipelining/schedules.py,
// _calculate_single_rank_operations) lists each rank's actions as <stage><F|I|W><micro-batch>
// with stage r for chunk 0 and 2K-1-r for chunk 1; these are its orders with the empty slots
// dropped and each stage written as its chunk (F<m>.<chunk>).
TEST(Zbv, TwoRanksFollowPyTorchsOrder) {
  EXPECT_EQ(compute_ops(zbv(2, 4, 0)),
            "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 F3.0 I0.0 W0.0 F2.1 I2.1 W2.1 I1.0 W1.0 "
            "F3.1 I3.1 W3.1 I2.0 W2.0 I3.0 W3.0");
  EXPECT_EQ(compute_ops(zbv(2, 4, 1)),
            "F0.0 F0.1 F1.0 F1.1 I0.1 W0.1 F2.0 I0.0 W0.0 F2.1 I1.1 W1.1 F3.0 I1.0 W1.0 F3.1 I2.1 "
            "W2.1 I2.0 I3.1 I3.0 W2.0 W3.1 W3.0");
}

TEST(Zbv, FourRanksFollowPyTorchsOrder) {
  const std::vector<std::string> eight = {
      "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 F2.1 I2.1 W2.1 F3.1 I3.1 "
      "W3.1 F7.0 I0.0 W0.0 F4.1 I4.1 W4.1 I1.0 W1.0 F5.1 I5.1 W5.1 I2.0 W2.0 F6.1 I6.1 W6.1 I3.0 "
      "W3.0 F7.1 I7.1 W7.1 I4.0 W4.0 I5.0 W5.0 I6.0 W6.0 I7.0 W7.0",
      "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F5.0 F1.1 I0.1 W0.1 F2.1 I1.1 W1.1 F3.1 I2.1 W2.1 F6.0 I0.0 "
      "W0.0 F4.1 I3.1 W3.1 F7.0 I1.0 W1.0 F5.1 I4.1 W4.1 I2.0 W2.0 F6.1 I5.1 W5.1 I3.0 W3.0 F7.1 "
      "I6.1 W6.1 I4.0 I7.1 I5.0 W4.0 I6.0 W5.0 I7.0 W6.0 W7.1 W7.0",
      "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 F4.0 F2.1 I0.1 W0.1 F3.1 I1.1 W1.1 F5.0 I0.0 W0.0 F4.1 I2.1 "
      "W2.1 F6.0 I1.0 W1.0 F5.1 I3.1 W3.1 F7.0 I2.0 W2.0 F6.1 I4.1 W4.1 I3.0 W3.0 F7.1 I5.1 W5.1 "
      "I4.0 I6.1 I5.0 I7.1 I6.0 W4.0 I7.0 W5.0 W6.1 W7.1 W6.0 W7.0",
      "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 F3.0 F3.1 I0.1 W0.1 F4.0 I0.0 W0.0 F4.1 I1.1 W1.1 F5.0 I1.0 "
      "W1.0 F5.1 I2.1 W2.1 F6.0 I2.0 W2.0 F6.1 I3.1 W3.1 F7.0 I3.0 W3.0 F7.1 I4.1 W4.1 I4.0 I5.1 "
      "I5.0 I6.1 I6.0 I7.1 I7.0 W4.0 W5.1 W6.1 W7.1 W5.0 W6.0 W7.0"};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(compute_ops(zbv(4, 8, r)), eight[r]) << r;
}

// With fewer than 2K-1 micro-batches PyTorch leaves the missing ones' slots empty: the same
// order without them (K = 4, M = 2: rank 0 runs micro-batches 0 and 1 of its 7 warm-up forwards).
TEST(Zbv, FewMicroBatchesLeaveTheMissingOnesOut) {
  EXPECT_EQ(compute_ops(zbv(4, 2, 0)),
            "F0.0 F1.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 I0.0 W0.0 I1.0 W1.0");
  EXPECT_EQ(compute_ops(zbv(4, 2, 3)),
            "F0.0 F0.1 F1.0 F1.1 I0.1 W0.1 I0.0 W0.0 I1.1 W1.1 I1.0 W1.0");
}

// The messages of the V at K = 2: rank 0 holds stages 0 (no receive) and 3 (the last: no send
// of activations, no gradient received), rank 1 stages 1 and 2, its chunk 0 sending to its chunk 1.
TEST(Zbv, SurroundsEachComputeOpWithItsChunksMessages) {
  EXPECT_EQ(program_to_string(zbv(2, 1, 0)),
            "F0.0 SA0.0 RA0.1 F0.1 I0.1 SG0.1 W0.1 RG0.0 I0.0 W0.0");
  EXPECT_EQ(program_to_string(zbv(2, 1, 1)),
            "RA0.0 F0.0 SA0.0 RA0.1 F0.1 SA0.1 RG0.1 I0.1 SG0.1 W0.1 RG0.0 I0.0 SG0.0 W0.0");
  const Placement v = placement_for(ScheduleKind::kZbv, 2, 2);
  EXPECT_EQ(peer_of({OpKind::kSendActivation, 0, 0}, 1, v), (Peer{1, 1}));  // stage 1 -> 2
  EXPECT_EQ(peer_of({OpKind::kSendActivation, 0, 1}, 1, v), (Peer{0, 1}));  // stage 2 -> 3
  EXPECT_EQ(peer_of({OpKind::kRecvGrad, 0, 0}, 1, v), (Peer{1, 1}));
  EXPECT_EQ(peer_of({OpKind::kSendGrad, 0, 1}, 0, v), (Peer{1, 1}));  // stage 3 -> 2
}

// Rank K-1 sends to itself (stage K-1 to K, and the gradient back). A rank that waits on its own
// send (Link bounds the sends in flight) must have posted the matching receive, and the executor
// posts the next two receives of the program before each op (kReceivesAhead): in zbv's
// programs the receive of every self message is among the two receives after its send.
TEST(Zbv, EverySelfMessageIsReceivedAmongTheNextTwoReceives) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 3 * k; ++m) {
      SCOPED_TRACE(fmt::format("K={} M={}", k, m));
      const Program program = zbv(k, m, k - 1);
      const Placement placement = placement_for(ScheduleKind::kZbv, k, 2);
      int self_sends = 0;
      for (size_t i = 0; i < program.size(); ++i) {
        const Op& send = program[i];
        const bool sends = send.kind == OpKind::kSendActivation || send.kind == OpKind::kSendGrad;
        if (!sends || peer_of(send, k - 1, placement).rank != k - 1) continue;
        ++self_sends;
        const Op receive{
            send.kind == OpKind::kSendActivation ? OpKind::kRecvActivation : OpKind::kRecvGrad,
            send.micro_batch, 1 - send.chunk};
        int receives_after = 0;
        size_t j = i + 1;
        for (; j < program.size() && program[j] != receive; ++j) {
          if (program[j].kind == OpKind::kRecvActivation || program[j].kind == OpKind::kRecvGrad) {
            ++receives_after;
          }
        }
        ASSERT_LT(j, program.size()) << to_string(send, true);
        EXPECT_LT(receives_after, kReceivesAhead) << to_string(send, true);
      }
      EXPECT_EQ(self_sends, 2 * m);  // each micro-batch's activation and gradient
    }
  }
}

// Every chunk is a stage like any other: each op kind once per micro-batch in ascending order
// (the rule that fixes the weight-gradient accumulation order), I after F, W after I.
TEST(Zbv, EveryChunkRunsEachMicroBatchOnceInAscendingOrder) {
  for (int k = 1; k <= 6; ++k) {
    const Placement placement = placement_for(ScheduleKind::kZbv, k, 2);
    for (int m = 1; m <= 4 * k; ++m) {
      for (int r = 0; r < k; ++r) {
        SCOPED_TRACE(fmt::format("K={} M={} rank={}", k, m, r));
        std::map<std::pair<int, OpKind>, std::vector<int>> order;
        for (const Op& op : zbv(k, m, r)) {
          ASSERT_TRUE(op.chunk == 0 || op.chunk == 1);
          order[{op.chunk, op.kind}].push_back(op.micro_batch);
          const auto done = [&](OpKind kind) { return order[{op.chunk, kind}].size(); };
          if (op.kind == OpKind::kBackwardInput) {
            EXPECT_GE(done(OpKind::kForward), done(OpKind::kBackwardInput));
          }
          if (op.kind == OpKind::kBackwardWeight) {
            EXPECT_GE(done(OpKind::kBackwardInput), done(OpKind::kBackwardWeight));
          }
        }
        std::vector<int> all(static_cast<size_t>(m));
        for (int i = 0; i < m; ++i) all[static_cast<size_t>(i)] = i;
        const std::vector<int> none;
        for (int c = 0; c < 2; ++c) {
          const int stage = placement.stage_of(r, c);
          EXPECT_EQ((order[{c, OpKind::kForward}]), all);
          EXPECT_EQ((order[{c, OpKind::kBackwardInput}]), all);
          EXPECT_EQ((order[{c, OpKind::kBackwardWeight}]), all);
          EXPECT_EQ((order[{c, OpKind::kBackward}]), none);
          EXPECT_EQ((order[{c, OpKind::kRecvActivation}]), stage > 0 ? all : none);
          EXPECT_EQ((order[{c, OpKind::kSendGrad}]), stage > 0 ? all : none);
          EXPECT_EQ((order[{c, OpKind::kSendActivation}]), stage < 2 * k - 1 ? all : none);
          EXPECT_EQ((order[{c, OpKind::kRecvGrad}]), stage < 2 * k - 1 ? all : none);
        }
      }
    }
  }
}

// At F = I = W = 1 per chunk op, a rank's 6M units of work start r units late (its first
// activation) and nothing waits after: the makespan is 6M + K - 1, the bubble (K-1)/(6M+K-1),
// once M >= 2K-1 (the micro-batches the phases are laid out for). With fewer the programs still
// run without deadlock, each message received in the order it was sent, in a longer step.
TEST(Zbv, MakespanIsTheWorkPlusTheFillFromTwoKMinusOneMicroBatches) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 4 * k; ++m) {
      SCOPED_TRACE(fmt::format("K={} M={}", k, m));
      const SimulationResult result = simulate_zbv(k, m);
      ASSERT_FALSE(result.deadlocked()) << result.deadlock_report();
      EXPECT_TRUE(result.orders_match()) << fmt::format("{}", result.order_mismatches.front());
      EXPECT_EQ(result.virtual_stages, 2);
      if (m >= 2 * k - 1) {
        EXPECT_DOUBLE_EQ(result.makespan, 6.0 * m + k - 1);
        EXPECT_NEAR(result.bubble_fraction, (k - 1.0) / (6.0 * m + k - 1), 1e-12);
      } else {
        EXPECT_GE(result.makespan, 6.0 * m + k - 1);
      }
    }
  }
}

// Where zbv's zero bubble beats the others at K = 4, M = 8 in the same units (a chunk op is half
// a one-chunk schedule's op): 1f1b 2 x 33, zb_h1 2 x 27, interleaved 57, zbv 51.
TEST(Zbv, BubbleIsBelowInterleavedsAndZbH1s) {
  const SimulationResult v = simulate_zbv(4, 8);
  std::vector<Program> interleaved, zb_h1;
  for (int r = 0; r < 4; ++r) {
    interleaved.push_back(make_program(ScheduleKind::kInterleaved, 4, 8, r, 2));
    zb_h1.push_back(make_program(ScheduleKind::kZbH1, 4, 8, r));
  }
  EXPECT_DOUBLE_EQ(v.makespan, 51);
  EXPECT_LT(v.makespan, simulate(interleaved).makespan);
  EXPECT_LT(v.makespan, 2 * simulate(zb_h1).makespan);
  EXPECT_LT(v.bubble_fraction, simulate(zb_h1).bubble_fraction);
}

// The simulator takes each chunk's time from its global stage under the V: rank 0 holds
// stages 0 and 3.
TEST(Zbv, SimulatorTimesEachChunkAsItsStageInTheV) {
  SimulationOptions options;
  options.stage_forward_times = {1, 1, 1, 3};
  options.stage_backward_times = {2, 2, 2, 6};
  options.stage_weight_times = {1, 1, 1, 3};
  const SimulationResult result = simulate_zbv(2, 3, options);
  ASSERT_FALSE(result.deadlocked());
  EXPECT_DOUBLE_EQ(result.ranks[0].busy_time, 3 * (1 + 2) + 3 * (3 + 6));
  EXPECT_DOUBLE_EQ(result.ranks[1].busy_time, 3 * (1 + 2) + 3 * (1 + 2));
}

TEST(Zbv, DescribesTheGridInTheV) {
  const std::string text = describe_schedule(ScheduleKind::kZbv, 2, 4, 2);
  EXPECT_EQ(text.rfind("zbv schedule: 2 ranks of 2 chunks (4 stages in a V: chunk 0 of rank r is "
                       "stage r, chunk 1 is stage 3 - r), 4 micro-batches, F = 1, I = 1 and W = 1 "
                       "time units (I + W = B = 2) per chunk\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("rank 1    . F0.0 F0.1 F1.0 F1.1 I0.1 W0.1 F2.0 I0.0 W0.0 F2.1 I1.1 W1.1 "
                      "F3.0 I1.0 W1.0 F3.1 I2.1 W2.1 I2.0 I3.1 I3.0 W2.0 W3.1 W3.0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("makespan: 25 time units\n"), std::string::npos) << text;
  EXPECT_NE(text.find("bubble fraction: 0.040"), std::string::npos) << text;
  // As 1F1B's memory: 2K chunk micro-batches of half a rank's layers each.
  EXPECT_NE(
      text.find("peak in-flight micro-batches per rank (a micro-batch once per chunk): 4 4\n"),
      std::string::npos)
      << text;
}

TEST(Zbv, NeedsTwoChunksPerRank) {
  using Setting = ScheduleShapeProblem::Setting;
  for (int v : {1, 3}) {
    const auto problem = schedule_shape_problem(ScheduleKind::kZbv, 4, 8, v);
    ASSERT_TRUE(problem);
    EXPECT_EQ(problem->setting, Setting::kVirtualStages);
    EXPECT_EQ(problem->message,
              fmt::format("zbv needs 2 chunks per rank (the V: chunk 0 of rank r is stage r, "
                          "chunk 1 stage 2K-1-r), got {}",
                          v));
  }
  EXPECT_FALSE(schedule_shape_problem(ScheduleKind::kZbv, 4, 1, 2));  // any M runs
  EXPECT_THROW(make_program(ScheduleKind::kZbv, 4, 8, 0, 1), Error);
  EXPECT_EQ(parse_schedule_kind("zbv"), ScheduleKind::kZbv);
  EXPECT_EQ(to_string(ScheduleKind::kZbv), "zbv");
  EXPECT_TRUE(splits_backward(ScheduleKind::kZbv));
}

TEST(Placement, TheVRunsChunkZeroDownAndChunkOneBackUp) {
  const Placement v = placement_for(ScheduleKind::kZbv, 4, 2);
  EXPECT_EQ(v.kind, PlacementKind::kV);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(v.stage_of(r, 0), r);
    EXPECT_EQ(v.stage_of(r, 1), 7 - r);
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(v.rank_of(v.stage_of(r, c)), r);
      EXPECT_EQ(v.chunk_of(v.stage_of(r, c)), c);
    }
  }
  EXPECT_TRUE(v.is_first(0, 0));
  EXPECT_TRUE(v.is_last(0, 1));
  EXPECT_FALSE(v.is_last(3, 1));
  EXPECT_EQ(placement_for(ScheduleKind::kInterleaved, 4, 2).kind, PlacementKind::kLoop);
  EXPECT_EQ(placement_for(ScheduleKind::kInterleaved, 4, 2).stage_of(1, 1), 5);
}

}  // namespace
}  // namespace mpipe::plan
