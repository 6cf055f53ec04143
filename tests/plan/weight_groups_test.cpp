// Tests for weight-gradient groups: the groups of a step's micro-batches, weight_group: auto, and
// their WB ops in every schedule's program (placement, order, copies before products).
#include "plan/weight_groups.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "plan/grid.h"
#include "plan/schedule.h"
#include "plan/simulator.h"

namespace mpipe::plan {
namespace {

TEST(WeightGroups, SplitTheMicroBatchesIntoConsecutiveGroupsTheLastShorter) {
  const WeightGroups groups = weight_groups(WeightGrads::kGrouped, 8, 3);
  EXPECT_TRUE(groups.deferred());
  ASSERT_EQ(groups.count(), 3);
  EXPECT_EQ(groups.first(0), 0);
  EXPECT_EQ(groups.last(0), 2);
  EXPECT_EQ(groups.first(2), 6);
  EXPECT_EQ(groups.last(2), 7);
  EXPECT_EQ(groups.size_of(2), 2);
  EXPECT_EQ(groups.group_of(5), 1);
  // batched: one group of all; one micro-batch per group (and the others) defers nothing.
  EXPECT_EQ(weight_groups(WeightGrads::kBatched, 8, 0).count(), 1);
  EXPECT_FALSE(weight_groups(WeightGrads::kBatched, 1, 0).deferred());
  EXPECT_FALSE(weight_groups(WeightGrads::kGrouped, 8, 1).deferred());
  EXPECT_FALSE(weight_groups(WeightGrads::kAccumulate, 8, 0).deferred());
  EXPECT_THROW(weight_groups(WeightGrads::kGrouped, 8, 0), Error);  // auto unresolved
  EXPECT_THROW(weight_groups(WeightGrads::kGrouped, 8, 9), Error);
  EXPECT_THROW(weight_groups(WeightGrads::kAuto, 8, 2), Error);
}

TEST(WeightGroups, AutoTakesTheFewestMicroBatchesWhoseRowsReachTheTarget) {
  EXPECT_EQ(auto_weight_group(64, 8), 4);  // 256 rows
  EXPECT_EQ(auto_weight_group(60, 8), 5);
  EXPECT_EQ(auto_weight_group(32, 4), 4);  // at most M
  EXPECT_EQ(auto_weight_group(512, 8), 1);
}

// Golden: gpipe's group ops after the SG of each group's last B; zb_h1's last stage runs group
// 0's after I3's SG (the gradient stage 0 waits for goes first); zbv at M = 2 on 2 ranks: rank 1's
// stage-2 product after the stage-1 gradient rank 0 waits for, rank 0's stage-3 product at once
// (no send follows: it fills rank 0's wait for that gradient).
TEST(WeightGroups, GoldenPrograms) {
  EXPECT_EQ(
      program_to_string(make_program(ScheduleKind::kGpipe, 2, 3, 1, 1, WeightGrads::kGrouped, 2)),
      "RA0 F0 RA1 F1 RA2 F2 B0 SG0 B1 SG1 WB1 B2 SG2 WB2");
  EXPECT_EQ(
      program_to_string(make_program(ScheduleKind::kZbH1, 2, 4, 1, 1, WeightGrads::kGrouped, 2)),
      "RA0 F0 I0 SG0 RA1 F1 I1 SG1 W0 RA2 F2 I2 SG2 W1 RA3 F3 I3 SG3 WB1 W2 W3 WB3");
  const auto zbv = [](int rank) {
    std::string ops;
    for (const Op& op : make_program(ScheduleKind::kZbv, 2, 2, rank, 2, WeightGrads::kGrouped, 2)) {
      if (!is_send(op.kind) && !is_receive(op.kind)) ops += to_string(op, true) + " ";
    }
    return ops;
  };
  EXPECT_EQ(zbv(1), "F0.0 F0.1 F1.0 F1.1 I0.1 W0.1 I0.0 W0.0 I1.1 W1.1 I1.0 WB1.1 W1.0 WB1.0 ");
  EXPECT_EQ(zbv(0), "F0.0 F1.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 WB1.1 I0.0 W0.0 I1.0 W1.0 WB1.0 ");
  // One micro-batch per group: the accumulating program.
  EXPECT_EQ(make_program(ScheduleKind::kZbH1, 2, 4, 1, 1, WeightGrads::kGrouped, 1),
            make_program(ScheduleKind::kZbH1, 2, 4, 1));
  EXPECT_THROW(make_program(ScheduleKind::kGpipe, 2, 4, 0, 1, WeightGrads::kGrouped, 0), Error);
}

// Every schedule, rank and chunk, groups that divide M and groups that do not: each group's WB op
// once, in ascending order, after the copy (B, or W where split) of each of its micro-batches and
// before any copy of the next group's, after its last copy and every send before the chunk's next
// copy; the program without them is the schedule's.
TEST(WeightGroups, EveryGroupOpFollowsItsCopiesInEverySchedule) {
  struct Shape {
    ScheduleKind kind;
    int chunks;
  };
  for (const Shape shape : {Shape{ScheduleKind::kGpipe, 1}, Shape{ScheduleKind::kOneFOneB, 1},
                            Shape{ScheduleKind::kZbH1, 1}, Shape{ScheduleKind::kInterleaved, 2},
                            Shape{ScheduleKind::kZbv, 2}}) {
    const OpKind copying =
        splits_backward(shape.kind) ? OpKind::kBackwardWeight : OpKind::kBackward;
    for (int ranks = 1; ranks <= 4; ++ranks) {
      for (int micro_batches : {4, 7, 8}) {
        if (schedule_shape_problem(shape.kind, ranks, micro_batches, shape.chunks)) continue;
        for (int size = 2; size <= micro_batches; ++size) {
          const WeightGroups groups = weight_groups(WeightGrads::kGrouped, micro_batches, size);
          for (int rank = 0; rank < ranks; ++rank) {
            const std::string where = to_string(shape.kind) + " K=" + std::to_string(ranks) +
                                      " M=" + std::to_string(micro_batches) +
                                      " g=" + std::to_string(size) + " rank " +
                                      std::to_string(rank);
            const Program program = make_program(shape.kind, ranks, micro_batches, rank,
                                                 shape.chunks, WeightGrads::kGrouped, size);
            Program without;
            std::ranges::copy_if(program, std::back_inserter(without), [](const Op& op) {
              return op.kind != OpKind::kWeightGradsBatched;
            });
            EXPECT_EQ(without, make_program(shape.kind, ranks, micro_batches, rank, shape.chunks))
                << where;
            for (int chunk = 0; chunk < shape.chunks; ++chunk) {
              int next_group = 0;  // the next group op expected in this chunk
              int copied = 0;      // the micro-batches copied so far
              for (size_t i = 0; i < program.size(); ++i) {
                const Op& op = program[i];
                if (op.chunk != chunk) continue;
                if (op.kind == copying) {
                  ASSERT_EQ(op.micro_batch, copied) << where;
                  ASSERT_EQ(groups.group_of(op.micro_batch), next_group)
                      << where << ": " << to_string(op) << " before the previous group's product";
                  ++copied;
                }
                if (op.kind != OpKind::kWeightGradsBatched) continue;
                ASSERT_LT(next_group, groups.count()) << where;
                EXPECT_EQ(op.micro_batch, groups.last(next_group)) << where;
                EXPECT_EQ(copied, groups.last(next_group) + 1) << where;
                // After its last copy and every send before the chunk's next copy: right after
                // the copy, or after a send (other group ops placed there aside).
                size_t copy = i, next_copy = i;
                while (program[copy].kind != copying || program[copy].chunk != chunk) --copy;
                EXPECT_EQ(program[copy].micro_batch, op.micro_batch) << where;
                while (next_copy < program.size() &&
                       (program[next_copy].kind != copying || program[next_copy].chunk != chunk)) {
                  EXPECT_FALSE(is_send(program[next_copy].kind))
                      << where << ": WB" << op.micro_batch << " before "
                      << to_string(program[next_copy]);
                  ++next_copy;
                }
                size_t before = i - 1;
                while (program[before].kind == OpKind::kWeightGradsBatched) --before;
                EXPECT_TRUE(before == copy || is_send(program[before].kind))
                    << where << ": WB" << op.micro_batch << " after " << to_string(program[before]);
                ++next_group;
              }
              EXPECT_EQ(next_group, groups.count()) << where << " chunk " << chunk;
            }
          }
        }
      }
    }
  }
}

// A group's WB op takes its share of the stage's deferred weight-gradient time.
TEST(WeightGroups, TheSimulatorTimesAGroupOpByItsShare) {
  const std::vector<Program> programs = {
      make_program(ScheduleKind::kGpipe, 1, 3, 0, 1, WeightGrads::kGrouped, 2)};
  SimulationOptions options;
  options.batched_weight_time = 3.0;  // all 3 micro-batches
  const SimulationResult result = simulate(programs, options);
  std::vector<double> durations;
  for (const TimedOp& t : result.ranks[0].compute) {
    if (t.op.kind == OpKind::kWeightGradsBatched) durations.push_back(t.end - t.start);
  }
  EXPECT_EQ(durations, (std::vector<double>{2.0, 1.0}));
  // F 3 x 1, B 3 x 2, the groups' 3.
  EXPECT_DOUBLE_EQ(result.makespan, 12.0);
}

}  // namespace
}  // namespace mpipe::plan
