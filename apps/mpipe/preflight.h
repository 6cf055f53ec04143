// Preflight of `mpipe train`: every check of the command line, config, data, model and paths that
// can fail, done on every rank before the first collective, so a bad input ends the job with one
// line and nothing written.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "config/experiment.h"
#include "data/dataset.h"

namespace mpipe::app {

struct TrainInputs {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string run_dir;
  std::string export_path;
  bool resuming = false;  // --resume or --resume-or-start: the run directory may hold a run
};

struct PreflightResult {
  config::Experiment experiment;
  std::unique_ptr<data::Dataset> dataset;
};

// Refuses to start a fresh run on top of an earlier one (its metrics and checkpoints would mix).
void check_run_dir_is_fresh(const std::string& run_dir);

// Collective over `world` (through comm::agree): throws AgreedError on every rank when any
// rank finds a problem, or when a rank's resolved config or rank layout differs from rank 0's.
PreflightResult preflight_train(const TrainInputs& inputs, const comm::Communicator& world);

}  // namespace mpipe::app
