// The spool's subcommands: `mpipe serve` (the daemon, on every rank under MPI), and `submit`,
// `status` and `cancel` (one process each).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::app {

class ServeCommand {
 public:
  // Adds the subcommand `serve` to `app`.
  explicit ServeCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Runs the spool's experiments on this rank until stopped; returns the process exit code.
  int run(const comm::Communicator& world);

 private:
  CLI::App* app_ = nullptr;
  std::string spool_dir_;
  double idle_exit_s_ = 0.0;  // 0 = never
  bool resume_lost_peer_ = false;
};

class SubmitCommand {
 public:
  // Adds the subcommand `submit` to `app`.
  explicit SubmitCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Queues the experiment; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string spool_dir_;
  std::string config_path_;
  std::vector<std::string> overrides_;
  std::string experiment_name_;
};

class StatusCommand {
 public:
  // Adds the subcommand `status` to `app`.
  explicit StatusCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Prints the spool's table; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string spool_dir_;
};

class CancelCommand {
 public:
  // Adds the subcommand `cancel` to `app`.
  explicit CancelCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Cancels the experiment; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string spool_dir_;
  std::string experiment_name_;
};

}  // namespace mpipe::app
