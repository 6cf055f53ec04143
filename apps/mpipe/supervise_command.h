// `mpipe supervise`: runs `mpipe train` under mpirun over a host list and, when a host or rank
// is lost, relaunches it on the hosts that still answer, re-planned, resuming its checkpoint.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace mpipe::app {

class SuperviseCommand {
 public:
  // Adds the subcommand `supervise` to `app`.
  explicit SuperviseCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Supervises the job to its end; returns the exit code: 0, or that of the job's last mpirun.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string hosts_;
  int max_restarts_ = 3;
  std::string mpirun_ = "mpirun";
  std::string mpirun_args_;
  double probe_timeout_s_ = 30.0;
  std::vector<std::string> command_;  // after --: train CONFIG [options]
};

}  // namespace mpipe::app
