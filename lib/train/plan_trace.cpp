// plan_trace: a plan's simulated step turned into trace events, as a run records them.
#include "train/plan_trace.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "core/error.h"
#include "pipeline/op_trace_kind.h"
#include "plan/placement.h"
#include "plan/schedule.h"

namespace mpipe::train {
namespace {

constexpr int64_t kStep = 1;  // the one step a plan predicts

log::TraceEvent op_event(const plan::TimedOp& timed) {
  return {.kind = pipeline::op_trace_kind(timed.op),
          .micro_batch = timed.op.micro_batch,
          .step = kStep,
          .start_s = timed.start,
          .end_s = timed.end,
          .chunk = timed.op.chunk,
          .bytes = 0};
}

log::TraceEvent step_event(log::TraceKind kind, double start_s, double end_s) {
  return {.kind = kind,
          .micro_batch = -1,
          .step = kStep,
          .start_s = start_s,
          .end_s = end_s,
          .chunk = -1,
          .bytes = 0};
}

}  // namespace

std::vector<log::RankTimeline> plan_timelines(const plan::PipelinePlan& plan) {
  const std::vector<plan::RankTimeline>& simulated = plan.timeline.ranks;
  const auto num_ranks = static_cast<int>(simulated.size());
  check(num_ranks >= 1 && std::cmp_equal(plan.stages.size(), num_ranks * plan.virtual_stages),
        "plan_trace: a timeline of {} ranks for {} stages of {} chunks per rank", num_ranks,
        plan.stages.size(), plan.virtual_stages);
  const plan::Placement placement =
      plan::placement_for(plan.schedule, num_ranks, plan.virtual_stages);
  // Each rank updates its chunks one after another (planner.cpp, simulate_step), every rank from
  // the same moment (the loss allreduce before it lines them up): the predicted step's end less
  // the slowest rank's phase.
  std::vector<double> optimizer_s(simulated.size(), 0.0);
  for (int s = 0; s < placement.num_stages(); ++s) {
    const plan::StagePlan& stage = plan.stages[static_cast<size_t>(s)];
    optimizer_s[static_cast<size_t>(placement.rank_of(s))] +=
        stage.optimizer_s + stage.shard_allgather_s;
  }
  const double update_start =
      plan.step_s - *std::max_element(optimizer_s.begin(), optimizer_s.end());
  std::vector<log::RankTimeline> out;
  for (int r = 0; r < num_ranks; ++r) {
    const plan::RankTimeline& timeline = simulated[static_cast<size_t>(r)];
    log::RankTimeline rank{.world_rank = r,
                           .replica = 0,
                           .clock_offset_s = 0.0,
                           .clock_uncertainty_s = 0.0,
                           .chunk_stages = {},
                           .events = {}};
    for (int c = 0; c < placement.virtual_stages; ++c) {
      rank.chunk_stages.push_back(placement.stage_of(r, c));
    }
    // Both lists are in program order, and a wait starts where the op before it ended.
    std::vector<plan::TimedOp> ops;
    std::ranges::merge(timeline.compute, timeline.waits, std::back_inserter(ops), {},
                       &plan::TimedOp::start, &plan::TimedOp::start);
    std::ranges::transform(ops, std::back_inserter(rank.events), op_event);
    double last_end = 0.0;
    for (const log::TraceEvent& event : rank.events) last_end = std::max(last_end, event.end_s);
    const double start = std::max(update_start, last_end);
    if (start > last_end) {
      rank.events.push_back(step_event(log::TraceKind::kLossAllreduce, last_end, start));
    }
    rank.events.push_back(
        step_event(log::TraceKind::kOptimizer, start, start + optimizer_s[static_cast<size_t>(r)]));
    out.push_back(std::move(rank));
  }
  return out;
}

nlohmann::json plan_trace(const plan::PipelinePlan& plan) {
  nlohmann::json trace = log::chrome_trace(plan_timelines(plan));
  trace["otherData"] = {{"predicted_by", "mpipe plan"},
                        {"schedule", plan::to_string(plan.schedule)},
                        {"step_s", plan.step_s},
                        {"bubble_fraction", plan.bubble_fraction}};
  return trace;
}

}  // namespace mpipe::train
