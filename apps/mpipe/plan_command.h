// `mpipe plan`: predicts an experiment's pipeline plan, its step time and memory (one process,
// no MPI, no training).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace mpipe::app {

class PlanCommand {
 public:
  // Adds the subcommand `plan` to `app`.
  explicit PlanCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Prints the plan; returns the process exit code (5 when the plan does not fit the memory limit).
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string config_path_;
  std::vector<std::string> overrides_;
  int stages_ = 1;              // used only when given
  int micro_batches_ = 1;       // likewise
  int threads_ = 1;             // --threads-per-rank
  std::string link_bandwidth_;  // --link-bandwidth
  bool calibrate_ = false;      // --calibrate
  bool assumed_rates_ = false;  // --assumed-rates
  std::string memory_limit_;
  bool json_ = false;
  std::string trace_path_;  // --trace
};

}  // namespace mpipe::app
