// The `serve --spool DIR [options]` a supervisor runs under mpirun: the spool it serves (the
// relaunched daemon resumes the spool's active experiment itself).
#pragma once

#include <string>
#include <vector>

namespace mpipe::supervise {

struct ServeCommand {
  std::string spool_dir;
  std::vector<std::string> args;  // `serve` and every argument after it, as given
};

// Reads `command` (what follows `--`): `serve`, then the daemon's own options (--spool and
// --idle-exit with a value, as `--opt V` or `--opt=V`). Throws InputError with one line for an
// option without its value, one the daemon does not take, or no --spool.
ServeCommand parse_serve_command(const std::vector<std::string>& command);

// The command of each launch: `serve`'s, with --resume-lost-peer (an experiment that loses a peer
// is then resumed however often it was before, not once: the supervisor relaunches the daemon on
// the hosts that answer, and its --max-restarts bounds the relaunches).
std::vector<std::string> supervised_serve_command(const ServeCommand& serve);

}  // namespace mpipe::supervise
