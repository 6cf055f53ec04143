// Preflight, then a weights evaluation over the world.
#include "job/eval_job.h"

#include "comm/watchdog.h"
#include "job/preflight.h"
#include "kernels/context.h"
#include "log/logging.h"

namespace mpipe::job {

train::WeightsEvaluation run_eval_job(const EvalInputs& inputs, const comm::Communicator& world) {
  PreflightResult checked =
      preflight_train({.config_path = inputs.config_path,
                       .overrides = inputs.overrides,
                       .run_dir = "",
                       .export_path = "",
                       .init_weights = {.path = inputs.source.weights, .skip = {}},
                       .resuming = false,
                       .stored_settings = false,
                       .any_world = false,
                       .evaluating = true},
                      world);
  log::setup_logging(world.rank(), world.size(), checked.experiment.log.level);
  if (comm::Watchdog* watchdog = world.watchdog()) watchdog->configure(checked.experiment.comm);
  kernels::KernelContext kernels(checked.experiment.train.precision);
  return train::evaluate_weights(checked.experiment, *checked.dataset, std::move(checked.plan),
                                 inputs.source, inputs.split, inputs.files, world, kernels);
}

}  // namespace mpipe::job
