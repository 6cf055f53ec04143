// What pipeline.virtual_stages allows, checked at preflight against the resolved world.
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
}

}  // namespace mpipe::train
