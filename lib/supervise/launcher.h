// How a supervised job is started and a host checked: mpirun over a host list, or srun on the
// nodes of a Slurm allocation (the command lines only; the supervisor runs them).
#pragma once

#include <string>
#include <vector>

#include "supervise/host_list.h"

namespace mpipe::supervise {

enum class LauncherKind { kMpirun, kSrun };

struct Launcher {
  LauncherKind kind = LauncherKind::kMpirun;
  std::string program = "mpirun";  // looked up on the PATH
  std::vector<std::string> args;   // given to every command, the job's and the probes'
};

// The command that runs `program` as `ranks` ranks on `hosts`, filling each host's slots in
// order (rank 0 on the first host):
//   mpirun -n RANKS --host h1:2,h2:2 ARGS... PROGRAM...
//   srun --nodes=N --ntasks=RANKS --ntasks-per-node=SLOTS --nodelist=h1,h2 --overlap
//        --kill-on-bad-exit=1 ARGS... PROGRAM...   (the first N hosts, as many as RANKS needs;
//        --ntasks-per-node when they have the same slots; a task that fails ends the step)
// Throws InputError when `hosts` lack the slots.
std::vector<std::string> job_command(const Launcher& launcher, int ranks,
                                     const std::vector<HostSlots>& hosts,
                                     const std::vector<std::string>& program);

// The command that runs `true` on `host` alone: whether the host still answers.
std::vector<std::string> probe_command(const Launcher& launcher, const std::string& host);

}  // namespace mpipe::supervise
