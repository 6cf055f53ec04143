// `mpipe submit`: check an experiment file as far as it can be checked without the daemon's world,
// then queue it in a spool.
#pragma once

#include <string>
#include <vector>

#include "serve/spool.h"

namespace mpipe::serve {

struct Submission {
  std::string spool_dir;
  std::string config_path;
  std::vector<std::string> overrides;  // --set key=value
  std::string name;                    // --name; empty = "<config stem>-<n>"
};

// Validates the experiment (check_experiment_for_any_world) and the name, then queues it
// (creating the spool if needed). Throws InputError with the one-line error of a bad experiment
// before anything is written to the spool.
QueueEntry submit_experiment(const Submission& submission);

}  // namespace mpipe::serve
