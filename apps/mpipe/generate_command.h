// `mpipe generate`: samples text from a trained language model (one process).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "train/generator.h"

namespace mpipe::app {

class GenerateCommand {
 public:
  // Adds the subcommand `generate` to `app`.
  explicit GenerateCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Prints the text generated; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string config_path_;
  std::vector<std::string> overrides_;
  std::string weights_path_;
  train::GenerateOptions options_;
};

}  // namespace mpipe::app
