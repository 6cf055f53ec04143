// Preflight, then a weights evaluation over the world.
#include "job/eval_job.h"

#include "job/weights_preflight.h"
#include "kernels/context.h"

namespace mpipe::job {

train::WeightsEvaluation run_eval_job(const EvalInputs& inputs, const comm::Communicator& world) {
  PreflightResult checked =
      preflight_weights(inputs.config_path, inputs.overrides, inputs.source.weights, world);
  kernels::KernelContext kernels(checked.experiment.train.precision);
  return train::evaluate_weights(checked.experiment, *checked.dataset, std::move(checked.plan),
                                 inputs.source, inputs.split, inputs.files, world, kernels);
}

}  // namespace mpipe::job
