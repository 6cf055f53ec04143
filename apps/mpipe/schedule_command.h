// `mpipe schedule`: prints a pipeline schedule as a grid (one process).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mpipe::app {

class ScheduleCommand {
 public:
  // Adds the subcommand `schedule` to `app`.
  explicit ScheduleCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Prints the schedule; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string schedule_kind_ = "gpipe";
  int stages_ = 4;
  int micro_batches_ = 8;
  int virtual_stages_ = 1;
};

}  // namespace mpipe::app
