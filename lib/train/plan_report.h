// What `mpipe plan` prints: the layer table, a table per stage with predicted time and memory,
// the bubble, the step time, the throughput and advice; as text or as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "config/experiment.h"
#include "model/model_builder.h"
#include "plan/planner.h"

namespace mpipe::train {

// `experiment.pipeline` as planned (stages and data_parallel resolved), for the header.
struct PlanReport {
  const config::Experiment& experiment;
  const model::ModelPlan& model;
  const plan::PipelinePlan& plan;
  plan::PipelineConfig pipeline;
  // Where plan.rates come from: "assumed" (the fixed rates the plan is chosen at) or "measured
  // in 0.12 s: linear 32 x 784 -> 512" (this machine's, the plan retimed at them).
  std::string rates_source = "assumed";
};

std::string plan_text(const PlanReport& report);

// {"config", "num_layers", "num_params", "stages", "data_parallel", "micro_batches",
//  "micro_batch_rows", "batch_size", "schedule" (the one the stages run), "schedule_setting"
//  (the experiment's: "auto" when the planner chose), "schedule_candidates" (under auto: one
//  {"schedule", "recompute", "step_s", "bubble_fraction", "peak_bytes" per stage, "fits",
//  "chosen"} per schedule weighed; else []), "recompute" (the mode the stages run),
//  "recompute_setting" (the experiment's: "auto" when the planner chose), "partition",
//  "memory_limit_bytes" (null: none), "layers": [{"index", "kind", "input", "output",
//  "num_params", "forward_flops"}], "stage_plans": [{"stage", "first_layer", "last_layer",
//  "num_params", "forward_flops", "backward_flops", "recompute_flops", "compute_s",
//  "optimizer_s", "shard_allgather_s", "tied_exchange_s", "peak_bytes", "evaluation_peak_bytes",
//  "fits", "memory":
//  {"params", "grads", "gradient_partials", "optimizer_state", "buffers", "kept_activations",
//  "recompute_workspace", "transient", "weight_grad_operands", "communication",
//  "allocator_rounding"}}], "cuts": [{"before_layer", "bytes_per_example",
//  "grad_bytes_per_example", "live": [{"name", "shape", "needs_grad"}]}] (one per cut between
//  stages: its live set, model::ModelGraph::live_set),
//  "bubble_fraction", "step_s", "samples_per_s", "largest_stage_share", "fits",
//  "problem" (null when it fits), "advice": [...], "rates": {...},
//  "rates_source"}; FLOPs and seconds per step.
nlohmann::ordered_json plan_json(const PlanReport& report);

}  // namespace mpipe::train
