// plan_trace: the step a pipeline plan predicts, as a run's timeline (`mpipe plan --trace FILE`),
// in trace.json's format, so that scripts/plot_timeline.py and Perfetto draw it as they draw a run.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "log/chrome_trace.h"
#include "plan/planner.h"

namespace mpipe::train {

// The traced step the plan's timeline (PipelinePlan::timeline) predicts, one RankTimeline per rank
// of one pipeline (replica 0: the plan simulates one), named with the global stages its chunks
// hold as a run's are; every event of step 1, in seconds from the step's start:
// - its compute ops with the simulator's start and end, in program order, each as the run records
//   it (pipeline::op_trace_kind: F<m>, B<m> also for I<m>, W<m>, WB<m>, W; the chunk's suffix when
//   the rank holds several), the receives it waited on (RA<m>, RG<m>) between them in program
//   order, from when it reached the receive to the message's arrival;
// - `optimizer`: the rank's chunks' optimizer phase (StagePlan::optimizer_s and
//   shard_allgather_s), starting where the plan starts every rank's, the predicted step less the
//   slowest rank's phase;
// - `loss allreduce` before it, from the rank's last op (the time it waits for the slowest rank,
//   with D > 1 also for the replicas' allreduce, which the plan does not draw apart), when there
//   is one.
// The plan models no recompute event inside B, no send posting or completion and no message
// bytes: they are left out.
std::vector<log::RankTimeline> plan_timelines(const plan::PipelinePlan& plan);

// log::chrome_trace of plan_timelines, its otherData naming what it predicts instead of clocks:
// {"predicted_by": "mpipe plan", "schedule", "step_s", "bubble_fraction"}.
nlohmann::json plan_trace(const plan::PipelinePlan& plan);

}  // namespace mpipe::train
