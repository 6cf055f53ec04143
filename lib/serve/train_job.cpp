// run_train_job: preflight_train, then train::run_training with the experiment's log level.
#include "serve/train_job.h"

#include "kernels/context.h"
#include "log/logging.h"

namespace mpipe::serve {

TrainOutcome run_train_job(const TrainInputs& inputs, train::RunOptions options,
                           const comm::Communicator& world) {
  PreflightResult checked = preflight_train(inputs, world);
  log::setup_logging(world.rank(), world.size(), checked.experiment.log.level);
  options.run_dir = inputs.run_dir;
  options.export_weights = inputs.export_path;
  kernels::KernelContext kernels;
  train::RunResult result =
      train::run_training(checked.experiment, *checked.dataset, options, world, kernels);
  return {.experiment = std::move(checked.experiment), .result = std::move(result)};
}

}  // namespace mpipe::serve
