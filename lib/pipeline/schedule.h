// Schedules as data: a pure function (kind, K, M, stage) → that stage's program for one step.
#pragma once

#include <string>
#include <vector>

#include "pipeline/op.h"
#include "pipeline/pipeline_config.h"

namespace mpipe::pipeline {

// The ops stage `stage` of `num_stages` runs in one training step over `num_micro_batches`.
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
// Communication ops surround the compute: RA before F (s > 0), SA after F (s < K-1),
// RG before B or I (s < K-1), SG after B or I (s > 0).
Program make_program(ScheduleKind kind, int num_stages, int num_micro_batches, int stage);

ScheduleKind parse_schedule_kind(const std::string& name);  // "gpipe" | "1f1b" | "zb_h1" | "auto"
// Whether the schedule splits backwards into I and W ops.
bool splits_backward(ScheduleKind kind);
std::string to_string(ScheduleKind kind);

}  // namespace mpipe::pipeline
