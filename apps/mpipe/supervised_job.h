// What `mpipe supervise` asks of the job it runs under mpirun or srun, `train` (one run, which
// the supervisor re-plans) or `serve` (the daemon, which re-plans the experiment it resumes): the
// ranks and command of each launch, what to watch while it runs, how to prepare a relaunch after
// a lost host, whether and how to widen it again when hosts answer again, and what to record at
// the end.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "supervise/host_list.h"
#include "supervise/run_recoveries.h"

namespace mpipe::app {

// A lost host or rank, after the probe: what ended the job, and the hosts before and after.
struct LostHosts {
  std::string failure;  // "exit status 205: mpirun lost a host's daemon ..."
  std::vector<supervise::HostSlots> hosts;
  // The relaunch's: those of the host pool (--hosts, then --spare) that answered the probe, within
  // the first launch's slots (supervise::chosen_hosts).
  std::vector<supervise::HostSlots> alive;
  std::vector<std::string> lost_hosts;  // the hosts of `hosts` not in `alive`
  int restart = 1;                      // the relaunch's number, from 1
  int max_restarts = 0;
  supervise::RunRecoveries::Clock::time_point failed_at;
};

// Hosts that answer their probe again while the job runs narrower than it started.
struct ReturnedHosts {
  std::vector<supervise::HostSlots> hosts;     // the job's now
  std::vector<supervise::HostSlots> returned;  // the lost hosts or spares that answered
  std::vector<supervise::HostSlots> wider;     // the wider launch's (supervise::wider_hosts)
};

class SupervisedJob {
 public:
  virtual ~SupervisedJob() = default;
  // The ranks of the next launch on `hosts`, and its command after the mpipe binary.
  virtual int ranks(const std::vector<supervise::HostSlots>& hosts) const = 0;
  virtual std::vector<std::string> command() const = 0;
  // Called every 0.1 s while the job runs.
  virtual void watch() = 0;
  // Prepares the relaunch on `lost.alive`: logs the recovery line and records the recovery.
  // Returns why the supervisor should give up instead (one line), nullopt to relaunch.
  virtual std::optional<std::string> prepare_relaunch(const LostHosts& lost) = 0;
  // Whether the job launched at `launched` has got under way (logged since then), so that every
  // rank handles a stop signal: before, SIGUSR1 would end a rank still in MPI_Init.
  virtual bool under_way(supervise::RunRecoveries::Clock::time_point launched) const = 0;
  // Whether to stop the job (SIGUSR1: a checkpoint at its next step boundary) to relaunch it on
  // `returned.wider`: nullopt to stop it (the wider plan is kept for widen(); the stop's line is
  // logged), else why it stays as it is (one line).
  virtual std::optional<std::string> plan_widening(const ReturnedHosts& returned) = 0;
  // After that stop, with exit status 0: whether the job finished meanwhile instead (it ended on
  // its own since `launched`).
  virtual bool finished_since(supervise::RunRecoveries::Clock::time_point launched) const = 0;
  // Prepares the wider relaunch planned last (the stop was sent at `stopped_at`): logs its line
  // and records the widening. Returns false when the job must be relaunched on its hosts as they
  // were instead (the serve daemon's experiment changed since the plan, and the wider world does
  // not suit the new one), after one line saying why.
  virtual bool widen(supervise::RunRecoveries::Clock::time_point stopped_at) = 0;
  // The supervisor ends; `completed`: the job's last launch ended with exit status 0, not after
  // a stop signal.
  virtual void ended(bool completed) = 0;
};

}  // namespace mpipe::app
