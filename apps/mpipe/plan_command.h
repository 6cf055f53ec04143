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
  bool parsed() const { return plan_->parsed(); }
  // Prints the plan; returns the process exit code (5 when the plan does not fit the memory limit).
  int run();

 private:
  CLI::App* plan_ = nullptr;
  std::string config_path_;
  std::vector<std::string> overrides_;
  int stages_ = 4;
  int micro_batches_ = 8;
  int plan_threads_ = 1;             // mpipe plan --threads-per-rank
  std::string plan_link_bandwidth_;  // mpipe plan --link-bandwidth
  bool plan_calibrate_ = false;      // mpipe plan --calibrate
  bool plan_assumed_rates_ = false;  // mpipe plan --assumed-rates
  std::string plan_memory_limit_;
  bool plan_json_ = false;
};

}  // namespace mpipe::app
