// What the end of a supervised mpirun or srun means: done, a lost host or rank (retried), a stop
// the supervisor forwarded, or a program error (never retried, its exit code kept).
#pragma once

#include <string>

#include "supervise/launcher.h"

namespace mpipe::supervise {

enum class JobOutcome {
  kDone,     // exit status 0
  kLost,     // a host or rank was lost: relaunch on the hosts that still answer
  kStopped,  // ended after the supervisor forwarded SIGTERM/SIGINT/SIGUSR1 to mpirun or srun
  kFailed,   // a program error (bad input, memory limit, a non-finite stop, ...): never retried
};

struct JobEnd {
  JobOutcome outcome = JobOutcome::kFailed;
  int exit_code = 1;    // what the supervisor exits with when it does not relaunch
  std::string meaning;  // e.g. "mpirun lost a host's daemon (the host died or was cut off)"
  // kLost only if a host then fails its probe (mpirun's 255: a daemon it could not start, from a
  // host lost during the launch, or from a launcher that fails on a host that answers).
  bool lost_if_a_host_is_gone = false;
};

// mpirun's exit statuses that mean a lost host or rank (Open MPI 4.1, measured by
// tests/multihost/supervise.sh): the watchdog's 3 (comm::kWatchdogExitCode, the rule of
// scripts/slurm/serve.sbatch), 205 when mpirun lost a host's daemon ("ORTE has lost
// communication with a remote daemon"), 137 when a rank was killed by SIGKILL; and 255 when it
// could not start a host's daemon ("ORTE was unable to reliably start one or more daemons": a
// host lost while the job was launched, measured by scripts/bench/failure_matrix.sh), a lost host
// only if one then fails its probe.
inline constexpr int kLostPeerExitCode = 3;
inline constexpr int kLostDaemonExitCode = 205;
inline constexpr int kRankKilledExitCode = 128 + 9;
inline constexpr int kUnstartedDaemonExitCode = 255;
// srun's (Slurm 22.05, measured by tests/multihost/slurm.sh) are 3, when a rank's watchdog ended
// the job, and 137, when Slurm killed the step on a node it set DOWN; srun has no 205.

// Reads `wait_status` (waitpid's) of the job's mpirun or srun (`launcher`); `stop_forwarded`:
// the supervisor passed a stop signal on to it, so its end is a stop, whatever the status (not
// retried).
JobEnd read_job_end(int wait_status, bool stop_forwarded, LauncherKind launcher);

}  // namespace mpipe::supervise
