// Schedules as data: a pure function (kind, K, M, rank, v) → that rank's program for one step.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/op.h"
#include "plan/pipeline_config.h"
#include "plan/placement.h"

namespace mpipe::plan {

// The ops rank `rank` of the pipeline's `num_ranks` (K) runs in one training step over
// `num_micro_batches`; with v = 1 chunk per rank, rank s holds stage s.
// kGpipe: all forwards in ascending micro-batch order, then all backwards in ascending order.
// kOneFOneB: min(K-s-1, M) warm-up forwards, then one forward one backward, then cool-down.
// kZbH1 (ZB-H1, Qi et al. 2024, "Zero Bubble Pipeline Parallelism"): 1F1B's forwards and input
// gradients (I in place of B), and the weight gradients W as separate ops: stage s runs no W in
// its first s slots after the warm-up (a slot is one I, with the F before it in the steady
// state), then the oldest pending W after each I, and its last s W ops at the end, where they
// fill the cool-down bubble. Stage s thus holds at most s + 1 micro-batches between I and W, and
// as many forwarded ones as under 1F1B.
// Every schedule runs each op kind (F, B, I, W) in ascending micro-batch order on every stage:
// that fixes the order in which weight gradients accumulate, so the weights do not depend on
// the schedule or on K.
// kInterleaved (interleaved 1F1B, Narayanan et al. 2021; PyTorch's ScheduleInterleaved1F1B):
// `rank` holds `virtual_stages` (v >= 2) chunks, chunk c being global stage
// rank + c·K (pipeline/placement.h). (v-1)·K + 2(K-1-rank) warm-up forwards (at most v·M), then
// one forward one backward, then the cool-down backwards; the k-th forward is chunk (k/K) mod v
// and the k-th backward chunk v-1 - (k/K) mod v, each chunk's micro-batches in ascending order.
// Needs M a multiple of K (schedule_shape_problem).
// kZbv (ZB-V, Qi et al. 2024; PyTorch's ScheduleZBVZeroBubble): v = 2 chunks per rank in the V
// placement (chunk 0 of rank r is stage r, chunk 1 stage 2K-1-r), backwards split into I and W.
// Rank r warms up with 2(K-r)-1 forwards of chunk 0, then r pairs F1 F0, then K-r triples F1 I1
// W1; the steady state runs F0 I0 W0 F1 I1 W1; the cool-down r pairs I0 I1, then K-r pairs I0 W0,
// then the remaining W ops, chunk 1's first. The phases are laid out for max(M, 2K-1)
// micro-batches; with fewer, the ops of the missing ones are left out.
// Every schedule runs each op kind in ascending micro-batch order per stage (per chunk).
// Communication ops surround the compute, each carrying its chunk: RA before F (global stage
// s > 0), SA after F (s < K·v-1), RG before B or I (s < K·v-1), SG after B or I (s > 0).
// With `weight_grads` batched and M > 1 (where Stage::defers_grads), the program ends with one
// WB op per chunk (OpKind::kWeightGradsBatched, micro-batch -1), later chunks first: after the
// last gradient was sent, off the pipeline's critical path.
// With `weight_grads` grouped in groups of `weight_group` > 1 micro-batches (plan/weight_groups.h),
// each chunk runs one such op per group, naming the group's last micro-batch, after the op that
// copies that micro-batch's operands (its W where backwards are split, else its B) and after
// every send the rank issues before the chunk's next copy: the product delays no message another
// rank waits for, and fills the wait for the next receive. Each op kind runs in ascending
// micro-batch order, so a chunk's group ops run in ascending group order, each after every copy
// of its group and before any of the next group's.
// Throws mpipe::Error for a shape schedule_shape_problem refuses, weight_grads: auto, or a
// weight_group outside 1..M under grouped.
Program make_program(ScheduleKind kind, int num_ranks, int num_micro_batches, int rank,
                     int virtual_stages = 1, WeightGrads weight_grads = WeightGrads::kAccumulate,
                     int weight_group = 0);

// The placement `kind`'s programs assume on K = `num_ranks` ranks of v chunks: the V for zbv,
// the loop placement for every other schedule.
Placement placement_for(ScheduleKind kind, int num_ranks, int virtual_stages);

// What is wrong with running `kind` on K ranks of v chunks with M micro-batches, and which
// setting it belongs to; the message reads after that setting's name ("--micro-batches: ",
// "exp.yaml:7: pipeline.micro_batches: "). nullopt when the shape is fine.
struct ScheduleShapeProblem {
  enum class Setting { kMicroBatches, kVirtualStages };
  Setting setting;
  std::string message;
};
std::optional<ScheduleShapeProblem> schedule_shape_problem(ScheduleKind kind, int num_ranks,
                                                           int num_micro_batches,
                                                           int virtual_stages);

// "gpipe" | "1f1b" | "zb_h1" | "interleaved" | "zbv" | "auto"
ScheduleKind parse_schedule_kind(const std::string& name);
// Whether the schedule splits backwards into I and W ops.
bool splits_backward(ScheduleKind kind);
std::string to_string(ScheduleKind kind);

}  // namespace mpipe::plan
