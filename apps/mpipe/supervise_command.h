// `mpipe supervise`: runs `mpipe train` (or the `mpipe serve` daemon) under mpirun over a host
// list (or srun inside a Slurm allocation) and, when a host or rank is lost, relaunches it on the
// hosts that still answer, re-planned, resuming its checkpoint; widens it again when lost hosts
// (or --spare ones) answer again.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "supervise/host_list.h"
#include "supervise/launcher.h"
#include "supervised_job.h"

namespace mpipe::app {

class SuperviseCommand {
 public:
  // Adds the subcommand `supervise` to `app`.
  explicit SuperviseCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Supervises the job to its end; returns the exit code: 0, or that of the job's last mpirun
  // or srun.
  int run();

 private:
  supervise::Launcher launcher() const;
  // The job after --: `serve ...`, else `train ...` (whose layout is planned for `slots`).
  std::unique_ptr<SupervisedJob> job(int slots) const;
  // --hosts, or with srun and no --hosts the allocation's nodes (SLURM_JOB_NODELIST) with their
  // tasks (SLURM_TASKS_PER_NODE) as slots.
  std::vector<supervise::HostSlots> initial_hosts() const;

  CLI::App* app_ = nullptr;
  std::string hosts_;
  int max_restarts_ = 3;
  std::string mpirun_ = "mpirun";
  std::string mpirun_args_;
  std::string launcher_ = "mpirun";
  std::string srun_args_;
  double probe_timeout_s_ = 30.0;
  double regrow_interval_s_ = 60.0;
  std::string spares_;
  std::vector<std::string> command_;  // after --: train CONFIG [options], or serve [options]
};

}  // namespace mpipe::app
