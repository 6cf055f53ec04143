// One evaluation the way `mpipe eval` runs it: preflight on every rank (nothing written), logging
// at the experiment's level, then the weights evaluated on a split over the ranks.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "train/weights_evaluation.h"

namespace mpipe::job {

struct EvalInputs {
  std::string config_path;
  std::vector<std::string> overrides;
  train::WeightsSource source;
  std::string split;       // "train", "val" or "test"; empty: the data's held-out split
  train::EvalFiles files;  // what rank 0 writes beside the printed line
};

// Collective over `world` (whose watchdog has the experiment's deadlines:
// use_experiment_deadlines): every rank returns the evaluation (train::evaluate_weights). Throws
// AgreedError on every rank for bad input (the experiment, the split, weights that do not fit the
// model, a missing or damaged checkpoint).
train::WeightsEvaluation run_eval_job(const EvalInputs& inputs, const comm::Communicator& world);

}  // namespace mpipe::job
