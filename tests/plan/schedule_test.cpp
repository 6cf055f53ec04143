// Tests for pipeline schedules: golden programs and invariants over many (K, M).
#include "plan/schedule.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "plan/grid.h"

namespace mpipe::plan {
namespace {

constexpr ScheduleKind kKinds[] = {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB};

std::vector<int> micro_batches_of(const Program& program, OpKind kind) {
  std::vector<int> result;
  for (const Op& op : program) {
    if (op.kind == kind) result.push_back(op.micro_batch);
  }
  return result;
}

std::vector<int> ascending(int count) {
  std::vector<int> result(static_cast<std::size_t>(count));
  for (int m = 0; m < count; ++m) result[static_cast<std::size_t>(m)] = m;
  return result;
}

TEST(Op, PrintsShortNames) {
  EXPECT_EQ(to_string(Op{OpKind::kRecvActivation, 2}), "RA2");
  EXPECT_EQ(to_string(Op{OpKind::kForward, 3}), "F3");
  EXPECT_EQ(to_string(Op{OpKind::kSendActivation, 2}), "SA2");
  EXPECT_EQ(to_string(Op{OpKind::kRecvGrad, 1}), "RG1");
  EXPECT_EQ(to_string(Op{OpKind::kBackward, 0}), "B0");
  EXPECT_EQ(to_string(Op{OpKind::kSendGrad, 11}), "SG11");
  EXPECT_EQ(to_string(Op{OpKind::kBackwardInput, 4}), "I4");
  EXPECT_EQ(to_string(Op{OpKind::kBackwardWeight, 5}), "W5");
}

// A message's two ends, and the op of a kind, chunk and micro-batch in a program.
TEST(Op, FindsTheOtherEndOfAMessage) {
  EXPECT_EQ(other_end(OpKind::kRecvActivation), OpKind::kSendActivation);
  EXPECT_EQ(other_end(OpKind::kSendActivation), OpKind::kRecvActivation);
  EXPECT_EQ(other_end(OpKind::kRecvGrad), OpKind::kSendGrad);
  EXPECT_EQ(other_end(OpKind::kSendGrad), OpKind::kRecvGrad);
  // GPipe's stage 1 of 2: RA0 F0 RA1 F1 B0 SG0 B1 SG1.
  const Program program = make_program(ScheduleKind::kGpipe, 2, 2, 1);
  EXPECT_EQ(find_op(program, OpKind::kSendGrad, 0, 1), 7u);
  try {
    find_op(program, OpKind::kSendActivation, 1, 0);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "no SA0.1 in the program");
  }
}

TEST(Schedule, ZbH1TwoStagesThreeMicroBatchesMatchesGolden) {
  // Stage 0 runs each W right after its I; the last stage sends its gradient first and runs each
  // W one slot late, the last one at the end.
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kZbH1, 2, 3, 0)),
            "F0 SA0 F1 SA1 RG0 I0 W0 F2 SA2 RG1 I1 W1 RG2 I2 W2");
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kZbH1, 2, 3, 1)),
            "RA0 F0 I0 SG0 RA1 F1 I1 SG1 W0 RA2 F2 I2 SG2 W1 W2");
}

TEST(Schedule, ZbH1FourStagesEightMicroBatchesComputeOrderMatchesGolden) {
  std::vector<std::string> compute;
  for (int s = 0; s < 4; ++s) {
    Program compute_ops;
    for (const Op& op : make_program(ScheduleKind::kZbH1, 4, 8, s)) {
      if (op.kind == OpKind::kForward || op.kind == OpKind::kBackwardInput ||
          op.kind == OpKind::kBackwardWeight) {
        compute_ops.push_back(op);
      }
    }
    compute.push_back(program_to_string(compute_ops));
  }
  EXPECT_EQ(compute[0], "F0 F1 F2 F3 I0 W0 F4 I1 W1 F5 I2 W2 F6 I3 W3 F7 I4 W4 I5 W5 I6 W6 I7 W7");
  EXPECT_EQ(compute[1], "F0 F1 F2 I0 F3 I1 W0 F4 I2 W1 F5 I3 W2 F6 I4 W3 F7 I5 W4 I6 W5 I7 W6 W7");
  EXPECT_EQ(compute[2], "F0 F1 I0 F2 I1 F3 I2 W0 F4 I3 W1 F5 I4 W2 F6 I5 W3 F7 I6 W4 I7 W5 W6 W7");
  EXPECT_EQ(compute[3], "F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 F5 I5 W2 F6 I6 W3 F7 I7 W4 W5 W6 W7");
}

// ZB-H1 is 1F1B with I for B and W ops added: the same forwards and input gradients in the same
// order, so the same messages in the same order, and at most stage + 1 micro-batches between
// their I and their W.
TEST(Schedule, ZbH1IsOneFOneBWithWeightOpsAddedAndBoundedPendingWeights) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 16; ++m) {
      for (int s = 0; s < k; ++s) {
        SCOPED_TRACE(fmt::format("K={} M={} stage={}", k, m, s));
        const Program zb = make_program(ScheduleKind::kZbH1, k, m, s);
        Program without_weights;
        int pending = 0, most_pending = 0;
        for (Op op : zb) {
          if (op.kind == OpKind::kBackwardWeight) {
            --pending;
            continue;
          }
          if (op.kind == OpKind::kBackwardInput) {
            most_pending = std::max(most_pending, ++pending);
            op.kind = OpKind::kBackward;
          }
          without_weights.push_back(op);
        }
        EXPECT_EQ(without_weights, make_program(ScheduleKind::kOneFOneB, k, m, s));
        EXPECT_LE(most_pending, std::min(s + 1, m));
        // Every W after its I, in ascending order (the order weight gradients accumulate in).
        EXPECT_EQ(micro_batches_of(zb, OpKind::kBackwardWeight), ascending(m));
        std::map<int, std::size_t> input_at;
        for (std::size_t i = 0; i < zb.size(); ++i) {
          if (zb[i].kind == OpKind::kBackwardInput) input_at[zb[i].micro_batch] = i;
          if (zb[i].kind == OpKind::kBackwardWeight) {
            ASSERT_TRUE(input_at.count(zb[i].micro_batch)) << "W" << zb[i].micro_batch;
          }
        }
      }
    }
  }
}

TEST(Schedule, GpipeTwoStagesTwoMicroBatchesMatchesGolden) {
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kGpipe, 2, 2, 0)),
            "F0 SA0 F1 SA1 RG0 B0 RG1 B1");
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kGpipe, 2, 2, 1)),
            "RA0 F0 RA1 F1 B0 SG0 B1 SG1");
}

TEST(Schedule, OneFOneBThreeStagesFourMicroBatchesMatchesGolden) {
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kOneFOneB, 3, 4, 0)),
            "F0 SA0 F1 SA1 F2 SA2 RG0 B0 F3 SA3 RG1 B1 RG2 B2 RG3 B3");
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kOneFOneB, 3, 4, 1)),
            "RA0 F0 SA0 RA1 F1 SA1 RG0 B0 SG0 RA2 F2 SA2 RG1 B1 SG1 RA3 F3 SA3 RG2 B2 SG2 "
            "RG3 B3 SG3");
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kOneFOneB, 3, 4, 2)),
            "RA0 F0 B0 SG0 RA1 F1 B1 SG1 RA2 F2 B2 SG2 RA3 F3 B3 SG3");
}

TEST(Schedule, OneStageHasNoCommunication) {
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kGpipe, 1, 3, 0)), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(program_to_string(make_program(ScheduleKind::kOneFOneB, 1, 3, 0)), "F0 B0 F1 B1 F2 B2");
}

// weight_grads: batched: the schedule's ops, then one WB op per chunk, later chunks first (where
// Stage::defers_grads: with more than one micro-batch); auto must be resolved first.
TEST(Schedule, BatchedWeightGradsAreTheRanksLastOpsLaterChunksFirst) {
  EXPECT_EQ(
      program_to_string(make_program(ScheduleKind::kGpipe, 2, 2, 1, 1, WeightGrads::kBatched)),
      "RA0 F0 RA1 F1 B0 SG0 B1 SG1 WB");
  const Program interleaved =
      make_program(ScheduleKind::kInterleaved, 2, 4, 0, 2, WeightGrads::kBatched);
  Program expected = make_program(ScheduleKind::kInterleaved, 2, 4, 0, 2);
  expected.push_back({.kind = OpKind::kWeightGradsBatched, .micro_batch = -1, .chunk = 1});
  expected.push_back({.kind = OpKind::kWeightGradsBatched, .micro_batch = -1, .chunk = 0});
  EXPECT_EQ(interleaved, expected);
  EXPECT_EQ(to_string(interleaved.back(), /*with_chunk=*/true), "WB.0");
  EXPECT_EQ(make_program(ScheduleKind::kGpipe, 2, 1, 0, 1, WeightGrads::kBatched),
            make_program(ScheduleKind::kGpipe, 2, 1, 0));
  for (WeightGrads other : {WeightGrads::kAccumulate, WeightGrads::kTree}) {
    EXPECT_EQ(make_program(ScheduleKind::kGpipe, 2, 4, 0, 1, other),
              make_program(ScheduleKind::kGpipe, 2, 4, 0));
  }
  EXPECT_THROW(make_program(ScheduleKind::kGpipe, 2, 4, 0, 1, WeightGrads::kAuto), Error);
}

TEST(Schedule, OneFOneBWithFewMicroBatchesEqualsGpipe) {
  // With M <= K-s-1 the warm-up already holds every forward.
  EXPECT_EQ(make_program(ScheduleKind::kOneFOneB, 4, 2, 0),
            make_program(ScheduleKind::kGpipe, 4, 2, 0));
}

TEST(Schedule, EveryMicroBatchRunsForwardThenBackwardOnceInAscendingOrder) {
  for (ScheduleKind kind : kKinds) {
    for (int k = 1; k <= 8; ++k) {
      for (int m = 1; m <= 16; ++m) {
        for (int s = 0; s < k; ++s) {
          SCOPED_TRACE(fmt::format("{} K={} M={} stage={}", to_string(kind), k, m, s));
          const Program program = make_program(kind, k, m, s);
          // Backwards ascending is what fixes the gradient accumulation order.
          EXPECT_EQ(micro_batches_of(program, OpKind::kForward), ascending(m));
          EXPECT_EQ(micro_batches_of(program, OpKind::kBackward), ascending(m));
          std::map<int, std::size_t> forward_at;
          for (std::size_t i = 0; i < program.size(); ++i) {
            if (program[i].kind == OpKind::kForward) forward_at[program[i].micro_batch] = i;
            if (program[i].kind == OpKind::kBackward) {
              ASSERT_TRUE(forward_at.count(program[i].micro_batch))
                  << "B" << program[i].micro_batch << " before its F";
            }
          }
        }
      }
    }
  }
}

TEST(Schedule, CommunicationSurroundsComputeOnlyWhereANeighbourExists) {
  for (ScheduleKind kind : kKinds) {
    for (int k = 1; k <= 8; ++k) {
      for (int s = 0; s < k; ++s) {
        const Program program = make_program(kind, k, 5, s);
        const std::vector<int> all = ascending(5);
        const std::vector<int> none;
        EXPECT_EQ(micro_batches_of(program, OpKind::kRecvActivation), s > 0 ? all : none);
        EXPECT_EQ(micro_batches_of(program, OpKind::kSendActivation), s < k - 1 ? all : none);
        EXPECT_EQ(micro_batches_of(program, OpKind::kRecvGrad), s < k - 1 ? all : none);
        EXPECT_EQ(micro_batches_of(program, OpKind::kSendGrad), s > 0 ? all : none);
        for (std::size_t i = 0; i < program.size(); ++i) {
          const Op& op = program[i];
          if (op.kind == OpKind::kRecvActivation || op.kind == OpKind::kRecvGrad) {
            ASSERT_LT(i + 1, program.size());
            const OpKind next =
                op.kind == OpKind::kRecvActivation ? OpKind::kForward : OpKind::kBackward;
            EXPECT_EQ(program[i + 1], (Op{next, op.micro_batch}));
          }
          if (op.kind == OpKind::kSendActivation || op.kind == OpKind::kSendGrad) {
            ASSERT_GT(i, 0u);
            const OpKind previous =
                op.kind == OpKind::kSendActivation ? OpKind::kForward : OpKind::kBackward;
            EXPECT_EQ(program[i - 1], (Op{previous, op.micro_batch}));
          }
        }
      }
    }
  }
}

TEST(Schedule, RejectsInvalidArguments) {
  EXPECT_THROW(make_program(ScheduleKind::kGpipe, 0, 4, 0), Error);
  EXPECT_THROW(make_program(ScheduleKind::kGpipe, 2, 0, 0), Error);
  EXPECT_THROW(make_program(ScheduleKind::kOneFOneB, 2, 4, 2), Error);
  EXPECT_THROW(make_program(ScheduleKind::kOneFOneB, 2, 4, -1), Error);
}

TEST(Schedule, ParsesAndPrintsScheduleNames) {
  EXPECT_EQ(parse_schedule_kind("gpipe"), ScheduleKind::kGpipe);
  EXPECT_EQ(parse_schedule_kind("1f1b"), ScheduleKind::kOneFOneB);
  EXPECT_EQ(parse_schedule_kind("zb_h1"), ScheduleKind::kZbH1);
  EXPECT_EQ(to_string(ScheduleKind::kZbH1), "zb_h1");
  EXPECT_TRUE(splits_backward(ScheduleKind::kZbH1));
  EXPECT_FALSE(splits_backward(ScheduleKind::kOneFOneB));
  for (ScheduleKind kind : kKinds) EXPECT_EQ(parse_schedule_kind(to_string(kind)), kind);
  try {
    parse_schedule_kind("pipedream");
    FAIL() << "no exception";
  } catch (const InputError& error) {
    EXPECT_STREQ(
        error.what(),
        "unknown schedule \"pipedream\" (expected gpipe, 1f1b, zb_h1, interleaved, zbv or auto)");
  }
}

}  // namespace
}  // namespace mpipe::plan
