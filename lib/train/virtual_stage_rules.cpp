// What pipeline.virtual_stages allows, and pipeline.weight_group within M, checked at preflight
// against the resolved world.
#include "train/virtual_stage_rules.h"

#include <fmt/format.h>

#include "core/error.h"
#include "plan/schedule.h"

namespace mpipe::train {

void check_virtual_stages(const config::Experiment& experiment, int num_ranks) {
  const plan::PipelineConfig& pipe = experiment.pipeline;
  if (auto problem = plan::schedule_shape_problem(pipe.schedule, num_ranks, pipe.micro_batches,
                                                  pipe.virtual_stages)) {
    const bool micro_batches =
        problem->setting == plan::ScheduleShapeProblem::Setting::kMicroBatches;
    throw InputError(fmt::format(
        "{}: {}",
        experiment.where(micro_batches ? "pipeline.micro_batches" : "pipeline.virtual_stages"),
        problem->message));
  }
  if (pipe.weight_grads == plan::WeightGrads::kGrouped && pipe.weight_group > pipe.micro_batches) {
    throw InputError(fmt::format("{}: must be at most pipeline.micro_batches = {}, got {}",
                                 experiment.where("pipeline.weight_group"), pipe.micro_batches,
                                 pipe.weight_group));
  }
}

}  // namespace mpipe::train
