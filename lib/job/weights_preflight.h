// The start of a job that runs saved weights over the world (mpipe eval, mpipe translate).
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "job/preflight.h"

namespace mpipe::job {

// preflight_train of the experiment at `config_path` with `overrides`, evaluating the weights file
// `weights` (empty: a checkpoint's), with no run directory or export to check; then this rank's
// logging at the experiment's level and the watchdog's deadlines from its comm section.
PreflightResult preflight_weights(const std::string& config_path,
                                  const std::vector<std::string>& overrides,
                                  const std::string& weights, const comm::Communicator& world);

}  // namespace mpipe::job
