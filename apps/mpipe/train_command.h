// `mpipe train`: trains the model an experiment file describes, on every rank under MPI.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "train/init_weights.h"

namespace mpipe::app {

// `train`'s run directory when --run-dir is not given: runs/<config name>.
std::string default_run_dir(const std::string& config_path);

class TrainCommand {
 public:
  // Adds the subcommand `train` to `app`.
  explicit TrainCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  const std::string& config_path() const { return config_path_; }
  const std::vector<std::string>& overrides() const { return overrides_; }
  // Trains on this rank; returns the process exit code.
  int run(const comm::Communicator& world);

 private:
  CLI::App* app_ = nullptr;
  std::string config_path_;
  std::vector<std::string> overrides_;
  std::string run_dir_;
  std::string export_path_;
  train::InitWeights init_weights_;  // --init-weights, --init-skip
  bool resume_ = false;
  bool resume_or_start_ = false;
};

}  // namespace mpipe::app
