// The planner's verdict on a layout for a supervised run (see planner_check.h).
#include "supervise/planner_check.h"

#include <omp.h>

#include "comm/topology.h"
#include "core/error.h"
#include "data/dataset.h"
#include "plan/batch_split.h"
#include "plan/pipeline_config.h"
#include "train/data_contract.h"
#include "train/pipeline_plan.h"
#include "train/resumed_weight_grads.h"
#include "train/run_checkpoint.h"
#include "train/trainer.h"
#include "train/virtual_stage_rules.h"

namespace mpipe::supervise {

namespace {

model::ModelPlan plan_model_of(const config::Experiment& experiment) {
  const auto dataset = data::make_dataset(experiment.data, experiment.train.seed);
  return model::plan_model(experiment.model, train::model_inputs(*dataset));
}

}  // namespace

Layout experiment_layout(const config::Experiment& experiment, int world_size) {
  comm::Topology topology;
  try {
    topology = train::resolve_topology(experiment.pipeline, 0, world_size);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", experiment.source, e.what()));
  }
  return {.stages = topology.num_pipeline_ranks,
          .replicas = topology.num_replicas,
          .micro_batches = experiment.pipeline.micro_batches};
}

bool tree_weight_grads(const config::Experiment& experiment) {
  return plan::resolve_weight_grads(experiment.pipeline) == plan::WeightGrads::kTree;
}

bool needs_auto_partition(const config::Experiment& experiment, const Layout& layout) {
  return experiment.pipeline.partition_mode == plan::PartitionMode::kManual &&
         experiment.pipeline.stages != layout.stages;
}

config::Experiment with_layout(config::Experiment experiment, const Layout& layout) {
  plan::PipelineConfig& pipe = experiment.pipeline;
  if (needs_auto_partition(experiment, layout)) {
    pipe.partition_mode = plan::PartitionMode::kAuto;
    pipe.partition.clear();
  }
  pipe.stages = layout.stages;
  pipe.data_parallel = layout.replicas;
  pipe.micro_batches = layout.micro_batches;
  return experiment;
}

PlannerCheck::PlannerCheck(config::Experiment experiment)
    : experiment_(std::move(experiment)), model_(plan_model_of(experiment_)) {}

void PlannerCheck::resume_from(const std::string& run_dir) {
  const std::optional<train::StoredSettings> stored = train::newest_stored_settings(run_dir);
  train::keep_weight_grads(stored ? train::checkpoint_weight_grads(run_dir, *stored) : std::nullopt,
                           experiment_.pipeline);
}

std::optional<std::string> PlannerCheck::operator()(const Layout& layout) const {
  const config::Experiment experiment = with_layout(experiment_, layout);
  try {
    plan::check_batch_split(experiment.train.batch_size, layout.micro_batches, layout.replicas,
                            experiment.where("train.batch_size"));
    train::check_virtual_stages(experiment, layout.stages);
    const plan::PipelinePlan plan = train::plan_experiment(experiment, model_, layout.stages,
                                                           layout.replicas, omp_get_max_threads());
    if (!plan.fits()) return plan.problem;
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace mpipe::supervise
