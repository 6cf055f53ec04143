// The pipeline plan of an experiment: the single call through which `mpipe train`'s preflight
// (every rank, handing it to the trainer) and `mpipe plan` choose the partition, so both agree.
#pragma once

#include "comm/topology.h"
#include "config/experiment.h"
#include "model/model_builder.h"
#include "optim/optimizer_config.h"
#include "plan/planner.h"

namespace mpipe::train {

// Floats of optimizer state per parameter: SGD 1 with momentum (else 0), Adam and AdamW 2.
int optimizer_slots(const optim::OptimizerConfig& optimizer);

// What preflight planned for a run on its world, handed to the trainer as it is: this rank's
// place, the model's shapes and the pipeline plan (partition, recompute mode, predictions).
struct RunPlan {
  comm::Topology topology;
  model::ModelPlan model;
  plan::PipelinePlan pipeline;
};

// The plan for K = num_ranks pipeline ranks (pipeline.stages) and D = num_replicas replicas
// (experiment.pipeline's `auto` counts resolved by the caller), each rank computing on
// `threads_per_rank` OpenMP threads (the predicted times; the partition does not depend on them).
// Errors name the experiment's keys.
plan::PipelinePlan plan_experiment(const config::Experiment& experiment,
                                   const model::ModelPlan& plan, int num_ranks, int num_replicas,
                                   int threads_per_rank);
// The same with the machine's rates given (`mpipe plan --calibrate`, `--link-bandwidth`); their
// `threads` are the threads per rank.
plan::PipelinePlan plan_experiment(const config::Experiment& experiment,
                                   const model::ModelPlan& plan, int num_ranks, int num_replicas,
                                   const plan::MachineRates& rates);

// `decided` (its partition, schedule, chunks, recompute mode and weight gradients, chosen at its
// own rates, as `mpipe train` chooses them) with its times predicted at `rates` instead: each
// stage's compute and optimizer time, the bubble, the step, samples/s and the simulated timeline
// (`mpipe plan`'s prediction at this machine's measured rates). Its memory, problem, advice and
// schedule candidates stay `decided`'s.
plan::PipelinePlan retimed(const config::Experiment& experiment, const model::ModelPlan& plan,
                           const plan::PipelinePlan& decided, int num_replicas,
                           const plan::MachineRates& rates);

// pipeline.balance: measured: the plan of `current`'s schedule, chunks and recompute mode whose
// `auto` partition balances `measured_time` instead of the predicted times (within the memory
// limit).
plan::PipelinePlan plan_measured(const config::Experiment& experiment, const model::ModelPlan& plan,
                                 const plan::PipelinePlan& current, int num_replicas,
                                 plan::StageCost measured_time);

}  // namespace mpipe::train
