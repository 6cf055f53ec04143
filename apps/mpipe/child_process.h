// The processes mpipe supervise starts (mpirun or srun, the host probes, scontrol): spawned in a
// process group of their own, and reaped without blocking.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace mpipe::app {

// `args` as posix_spawn's argv (pointing into `args`, ended by a null pointer).
std::vector<char*> argv_of(const std::vector<std::string>& args);

// Starts `args` (args[0] looked up on PATH) in a process group of its own, so a terminal's
// Ctrl-C reaches it once, through the supervisor; `quiet`: its output goes to /dev/null. Throws
// Error naming the program when it cannot be started.
pid_t spawn(const std::vector<std::string>& args, bool quiet);

// waitpid's status of `pid` if it has ended, else nullopt.
std::optional<int> ended(pid_t pid);

}  // namespace mpipe::app
