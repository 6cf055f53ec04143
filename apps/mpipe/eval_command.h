// `mpipe eval`: evaluates a checkpoint or weights file on a split of the data, pipelined over
// the ranks as training is.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::app {

class EvalCommand {
 public:
  // Adds the subcommand `eval` to `app`.
  explicit EvalCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  const std::string& config_path() const { return config_path_; }
  const std::vector<std::string>& overrides() const { return overrides_; }
  // Evaluates on this rank; returns the process exit code.
  int run(const comm::Communicator& world);

 private:
  CLI::App* app_ = nullptr;
  std::string config_path_;
  std::vector<std::string> overrides_;
  std::string weights_path_;
  std::string checkpoint_run_dir_;     // --checkpoint
  std::string split_;                  // --split; "" = the data's held-out split
  std::string losses_;                 // --losses; "" = none
  std::string logits_;                 // --logits; "" = none
  std::string logits_limit_ = "1GiB";  // --logits-limit
};

}  // namespace mpipe::app
