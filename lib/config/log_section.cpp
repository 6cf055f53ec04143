// The `log:` section: progress cadence and log level.
#include "config/bounded.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {

log::LogConfig parse_log(const Field& section) {
  const MapReader map(section, {"every", "level"});
  log::LogConfig config;
  if (auto f = map.get("every")) config.every = read_int(*f, at_least(1));
  if (auto f = map.get("level")) {
    config.level = std::string(f->as_choice<std::string_view>({{"trace", "trace"},
                                                               {"debug", "debug"},
                                                               {"info", "info"},
                                                               {"warn", "warn"},
                                                               {"error", "error"}}));
  }
  return config;
}

}  // namespace mpipe::config
