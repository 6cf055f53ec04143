// Experiment → planner request.
#include "train/pipeline_plan.h"

namespace mpipe::train {

int optimizer_slots(const optim::OptimizerConfig& optimizer) {
  if (optimizer.kind == optim::OptimizerKind::kSgd) return optimizer.momentum != 0.0 ? 1 : 0;
  return 2;
}

namespace {

plan::PlanRequest plan_request(const config::Experiment& experiment, int num_ranks,
                               int num_replicas, const plan::MachineRates& rates) {
  plan::PlanRequest request{
      .pipeline = experiment.pipeline,
      .batch_size = experiment.train.batch_size,
      .optimizer_slots = optimizer_slots(experiment.optimizer),
      .optimizer_shards = experiment.optimizer.shard_across_replicas ? num_replicas : 1,
      .clips_gradients = experiment.optimizer.clip_norm > 0,
      .rates = rates,
      .partition_where = experiment.where("pipeline.partition"),
      .memory_limit_where = experiment.where("pipeline.memory_limit"),
      .eval_batch_size = experiment.train.eval_batch_size > 0 ? experiment.train.eval_batch_size
                                                              : experiment.train.batch_size,
      .eval_batch_where = experiment.where("train.eval_batch_size")};
  request.pipeline.stages = num_ranks;
  request.pipeline.data_parallel = num_replicas;
  return request;
}

}  // namespace

plan::PipelinePlan plan_experiment(const config::Experiment& experiment,
                                   const model::ModelPlan& plan, int num_ranks, int num_replicas,
                                   int threads_per_rank) {
  plan::MachineRates rates;
  rates.threads = threads_per_rank;
  return plan_experiment(experiment, plan, num_ranks, num_replicas, rates);
}

plan::PipelinePlan plan_experiment(const config::Experiment& experiment,
                                   const model::ModelPlan& plan, int num_ranks, int num_replicas,
                                   const plan::MachineRates& rates) {
  return plan::plan_pipeline(plan, plan_request(experiment, num_ranks, num_replicas, rates));
}

plan::PipelinePlan plan_measured(const config::Experiment& experiment, const model::ModelPlan& plan,
                                 const plan::PipelinePlan& current, int num_replicas,
                                 plan::StageCost measured_time) {
  const int num_ranks = static_cast<int>(current.stages.size()) / current.virtual_stages;
  plan::PlanRequest request = plan_request(experiment, num_ranks, num_replicas, current.rates);
  request.pipeline.schedule = current.schedule;
  request.pipeline.virtual_stages = current.virtual_stages;
  request.pipeline.recompute = current.recompute;
  request.pipeline.weight_grads = current.weight_grads;
  request.pipeline.weight_group = current.weight_group;
  request.measured_time = std::move(measured_time);
  return plan::plan_pipeline(plan, request);
}

plan::PipelinePlan retimed(const config::Experiment& experiment, const model::ModelPlan& plan,
                           const plan::PipelinePlan& decided, int num_replicas,
                           const plan::MachineRates& rates) {
  const int num_ranks = static_cast<int>(decided.stages.size()) / decided.virtual_stages;
  plan::PlanRequest request = plan_request(experiment, num_ranks, num_replicas, rates);
  request.pipeline.schedule = decided.schedule;
  request.pipeline.virtual_stages = decided.virtual_stages;
  request.pipeline.recompute = decided.recompute;
  request.pipeline.weight_grads = decided.weight_grads;
  request.pipeline.weight_group = decided.weight_group;
  request.pipeline.partition_mode = plan::PartitionMode::kManual;
  request.pipeline.balance = plan::Balance::kPredicted;
  request.pipeline.partition.clear();
  for (const plan::StagePlan& stage : decided.stages) {
    request.pipeline.partition.push_back(stage.layers.size());
  }
  const plan::PipelinePlan timed = plan::plan_pipeline(plan, request);
  plan::PipelinePlan out = decided;
  for (size_t s = 0; s < out.stages.size(); ++s) {
    out.stages[s].compute_s = timed.stages[s].compute_s;
    out.stages[s].optimizer_s = timed.stages[s].optimizer_s;
    out.stages[s].shard_allgather_s = timed.stages[s].shard_allgather_s;
    out.stages[s].tied_exchange_s = timed.stages[s].tied_exchange_s;
  }
  out.bubble_fraction = timed.bubble_fraction;
  out.step_s = timed.step_s;
  out.samples_per_s = timed.samples_per_s;
  out.largest_stage_share = timed.largest_stage_share;
  out.timeline = timed.timeline;
  out.rates = rates;
  return out;
}

}  // namespace mpipe::train
