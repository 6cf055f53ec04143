// Experiment: one YAML experiment file parsed into the plain structs each module owns.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_config.h"
#include "comm/comm_config.h"
#include "config/train_config.h"
#include "data/data_config.h"
#include "log/log_config.h"
#include "model/layer_spec.h"
#include "optim/optimizer_config.h"
#include "plan/pipeline_config.h"

namespace mpipe::config {

struct Experiment {
  std::string source;  // the file it was read from
  model::ModelSpec model;
  data::DataConfig data;
  train::TrainConfig train;
  optim::OptimizerConfig optimizer;
  plan::PipelineConfig pipeline;
  checkpoint::CheckpointConfig checkpoint;
  log::LogConfig log;
  comm::CommConfig comm;
  // Where each key outside `model:` was set (file and line, or --set), for errors found later.
  std::map<std::string, model::SourceRef> refs;

  // "exp.yaml:9: train.batch_size" (or "--set train.batch_size"; "exp.yaml: train.batch_size"
  // for a key left at its default).
  std::string where(const std::string& key) const {
    const auto found = refs.find(key);
    return found != refs.end() ? found->second.prefix() : source + ": " + key;
  }
};

// Reads and validates an experiment file. `overrides` are "key.path=value" strings from
// --set, applied before validation. Throws InputError "file:line: key.path: message".
Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides);

// Reads the `comm:` section only (`overrides` applied), for the watchdog's deadlines before the
// experiment is loaded: the start-up handshake and preflight wait on peers too. Throws InputError
// as load_experiment does for a problem in that section or the file.
comm::CommConfig load_comm_section(const std::string& path,
                                   const std::vector<std::string>& overrides);

}  // namespace mpipe::config
