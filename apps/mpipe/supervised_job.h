// What `mpipe supervise` asks of the job it runs under mpirun or srun, `train` (one run, which
// the supervisor re-plans) or `serve` (the daemon, which re-plans the experiment it resumes): the
// ranks and command of each launch, what to watch while it runs, how to prepare a relaunch after
// a lost host, and what to record at the end.
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
  std::vector<supervise::HostSlots> alive;  // those that answered the probe
  std::vector<std::string> lost_hosts;      // the hosts of `hosts` not in `alive`
  int restart = 1;                          // the relaunch's number, from 1
  int max_restarts = 0;
  supervise::RunRecoveries::Clock::time_point failed_at;
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
  // The supervisor ends; `completed`: the job's last launch ended with exit status 0, not after
  // a stop signal.
  virtual void ended(bool completed) = 0;
};

}  // namespace mpipe::app
