// `mpipe compare`: compares two safetensors weight files tensor by tensor (one process).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace mpipe::app {

class CompareCommand {
 public:
  // Adds the subcommand `compare` to `app`.
  explicit CompareCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Prints the differences; returns the process exit code: 0 when the files agree, else 1.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::vector<std::string> paths_;
  double rtol_ = 0.0;
  std::string only_;  // a regular expression: compare only the tensors it matches
};

}  // namespace mpipe::app
