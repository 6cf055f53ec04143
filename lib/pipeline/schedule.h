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
// Communication ops surround the compute: RA before F (s > 0), SA after F (s < K-1),
// RG before B (s < K-1), SG after B (s > 0).
Program make_program(ScheduleKind kind, int num_stages, int num_micro_batches, int stage);

ScheduleKind parse_schedule_kind(const std::string& name);  // "gpipe" | "1f1b"
std::string to_string(ScheduleKind kind);

}  // namespace mpipe::pipeline
