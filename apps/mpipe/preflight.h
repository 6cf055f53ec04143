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

// Collective over `world` (through comm::agree): throws AgreedError on every rank when any
// rank finds a problem.
PreflightResult preflight_train(const TrainInputs& inputs, const comm::Communicator& world);

}  // namespace mpipe::app
