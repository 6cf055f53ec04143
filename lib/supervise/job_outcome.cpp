// What the end of a supervised mpirun means: done, a lost host or rank (retried), a stop the
// supervisor forwarded, or a program error (never retried, its exit code kept).
#include "supervise/job_outcome.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstring>

namespace mpipe::supervise {

namespace {

// The meaning of mpipe's own exit codes (docs/design/operations.md) and mpirun's.
std::string exit_meaning(int code) {
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
      return "mpirun lost a host's daemon: the host died or was cut off";
    case kRankKilledExitCode:
      return "a rank was killed by SIGKILL: its host's processes killed, or the OOM killer";
    default:
      return "a program error";
  }
}

}  // namespace

JobEnd read_job_end(int wait_status, bool stop_forwarded) {
  JobEnd end;
  if (WIFSIGNALED(wait_status)) {
    const int signal = WTERMSIG(wait_status);
    end.exit_code = 128 + signal;
    end.meaning =
        fmt::format("mpirun itself was killed by signal {} ({})", signal, strsignal(signal));
    end.outcome = stop_forwarded ? JobOutcome::kStopped : JobOutcome::kFailed;
    return end;
  }
  end.exit_code = WEXITSTATUS(wait_status);
  if (end.exit_code == 0) {
    end.outcome = JobOutcome::kDone;
    end.meaning = "done";
    return end;
  }
  end.meaning = exit_meaning(end.exit_code);
  if (stop_forwarded) {
    end.outcome = JobOutcome::kStopped;
  } else if (end.exit_code == kLostPeerExitCode || end.exit_code == kLostDaemonExitCode ||
             end.exit_code == kRankKilledExitCode) {
    end.outcome = JobOutcome::kLost;
  } else {
    end.outcome = JobOutcome::kFailed;
  }
  return end;
}

}  // namespace mpipe::supervise
