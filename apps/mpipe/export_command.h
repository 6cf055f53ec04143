// `mpipe export`: writes a committed checkpoint's weights as a safetensors file (one process).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace mpipe::app {

class ExportCommand {
 public:
  // Adds the subcommand `export` to `app`.
  explicit ExportCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Writes the weights file; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string run_dir_;
  std::string weights_path_;  // the file written
  int64_t step_ = -1;         // --step; -1 = the newest committed checkpoint
};

}  // namespace mpipe::app
