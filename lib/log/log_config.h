// Logging settings (the `log:` section of an experiment).
#pragma once

#include <cstdint>
#include <string>

namespace mpipe::log {

struct LogConfig {
  int64_t every = 10;          // steps between progress lines and metrics records
  std::string level = "info";  // trace, debug, info, warn, error
};

}  // namespace mpipe::log
