// The `comm:` section: the watchdog's deadlines for waits on peers, the MPI progress thread.
#include "config/duration.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {

comm::CommConfig parse_comm(const Field& section) {
  const MapReader map(section, {"timeout", "startup_timeout", "stop_grace", "progress_thread"});
  comm::CommConfig config;
  if (auto f = map.get("timeout")) config.timeout_s = read_duration_or_auto(*f);
  if (auto f = map.get("startup_timeout")) config.startup_timeout_s = read_duration(*f);
  if (auto f = map.get("stop_grace")) config.stop_grace_s = read_duration_or_auto(*f);
  if (auto f = map.get("progress_thread")) config.progress_thread = f->as_bool();
  return config;
}

}  // namespace mpipe::config
