// What the end of a supervised mpirun or srun means (see job_outcome.h).
#include "supervise/job_outcome.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstring>

namespace mpipe::supervise {

namespace {

// The meaning of mpipe's own exit codes (docs/design/operations.md) and mpirun's or srun's.
std::string exit_meaning(int code, LauncherKind launcher) {
  const bool srun = launcher == LauncherKind::kSrun;
  switch (code) {
    case 1:
      return "a program error";
    case 2:
      return "bad input: a config, data or checkpoint";
    case kLostPeerExitCode:
      return "a rank lost a peer";
    case 4:
      return "a rank passed pipeline.memory_limit";
    case kLostDaemonExitCode:
      return srun ? "a program error" : "mpirun lost a host's daemon: the host died or was cut off";
    case kUnstartedDaemonExitCode:
      return srun ? "a program error"
                  : "mpirun could not start a host's daemon: the host is down or cut off, or its "
                    "launcher (ssh) failed";
    case kRankKilledExitCode:
      return srun ? "a task was killed by SIGKILL: Slurm ended the step on a node it set DOWN, or "
                    "the OOM killer"
                  : "a rank was killed by SIGKILL: its host's processes killed, or the OOM killer";
    default:
      return "a program error";
  }
}

}  // namespace

JobEnd read_job_end(int wait_status, bool stop_forwarded, LauncherKind launcher) {
  const bool srun = launcher == LauncherKind::kSrun;
  JobEnd end;
  if (WIFSIGNALED(wait_status)) {
    const int signal = WTERMSIG(wait_status);
    end.exit_code = 128 + signal;
    end.meaning = fmt::format("{} itself was killed by signal {} ({})", srun ? "srun" : "mpirun",
                              signal, strsignal(signal));
    end.outcome = stop_forwarded ? JobOutcome::kStopped : JobOutcome::kFailed;
    return end;
  }
  end.exit_code = WEXITSTATUS(wait_status);
  if (end.exit_code == 0) {
    end.outcome = JobOutcome::kDone;
    end.meaning = "done";
    return end;
  }
  end.meaning = exit_meaning(end.exit_code, launcher);
  if (stop_forwarded) {
    end.outcome = JobOutcome::kStopped;
  } else if (end.exit_code == kLostPeerExitCode || end.exit_code == kRankKilledExitCode ||
             (end.exit_code == kLostDaemonExitCode && !srun)) {
    end.outcome = JobOutcome::kLost;
  } else if (end.exit_code == kUnstartedDaemonExitCode && !srun) {
    end.outcome = JobOutcome::kLost;
    end.lost_if_a_host_is_gone = true;
  } else {
    end.outcome = JobOutcome::kFailed;
  }
  return end;
}

}  // namespace mpipe::supervise
