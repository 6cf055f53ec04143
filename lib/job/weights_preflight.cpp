// The start of a job that runs saved weights (see weights_preflight.h).
#include "job/weights_preflight.h"

#include "comm/watchdog.h"
#include "log/logging.h"

namespace mpipe::job {

PreflightResult preflight_weights(const std::string& config_path,
                                  const std::vector<std::string>& overrides,
                                  const std::string& weights, const comm::Communicator& world) {
  PreflightResult checked = preflight_train({.config_path = config_path,
                                             .overrides = overrides,
                                             .run_dir = "",
                                             .export_path = "",
                                             .init_weights = {.path = weights, .skip = {}},
                                             .resuming = false,
                                             .stored_settings = false,
                                             .any_world = false,
                                             .evaluating = true},
                                            world);
  log::setup_logging(world.rank(), world.size(), checked.experiment.log.level);
  if (comm::Watchdog* watchdog = world.watchdog()) watchdog->configure(checked.experiment.comm);
  return checked;
}

}  // namespace mpipe::job
