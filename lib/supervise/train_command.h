// The `train CONFIG [options]` a supervisor runs under mpirun: what it reads of it (the config,
// --set, the run directory) and the command line of a relaunch on another layout.
#pragma once

#include <string>
#include <vector>

#include "supervise/layout.h"

namespace mpipe::supervise {

struct TrainCommand {
  std::string config_path;
  std::vector<std::string> overrides;  // the --set values, in order
  std::string run_dir;                 // --run-dir; empty: train's default
  // Every argument after `train`, as given, less --resume and --resume-or-start.
  std::vector<std::string> args;
};

// Reads `command` (what follows `--`): `train`, the config, then train's own options (--set,
// --run-dir, --export-weights, --init-weights, --init-skip with a value, as `--opt V` or
// `--opt=V`; the flags --resume and --resume-or-start). Throws InputError with one line for
// another command, a missing config, an option without its value, or an option train does not
// take.
TrainCommand parse_train_command(const std::vector<std::string>& command);

// `train ...` as given, resuming the run from its newest committed checkpoint if there is one
// (--resume-or-start), on `layout`: --set pipeline.stages, data_parallel, micro_batches (and
// pipeline.partition=auto when `auto_partition`).
std::vector<std::string> relaunch_command(const TrainCommand& command, const Layout& layout,
                                          bool auto_partition);

}  // namespace mpipe::supervise
