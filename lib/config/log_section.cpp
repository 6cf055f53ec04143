// The `log:` section: progress cadence, log level, the traced steps, the peak for the MFU,
// TensorBoard.
#include <fmt/format.h>

#include "config/bounded.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {
namespace {

// Steps counted from 1, strictly ascending.
std::vector<int64_t> read_trace_steps(const Field& field) {
  std::vector<int64_t> steps;
  for (const Field& entry : field.elements("a list of steps")) {
    const int64_t step = read_int(entry, at_least(1));
    if (!steps.empty() && step <= steps.back()) {
      entry.fail(fmt::format("steps must be ascending, got {} after {}", step, steps.back()));
    }
    steps.push_back(step);
  }
  return steps;
}

}  // namespace

log::LogConfig parse_log(const Field& section) {
  const MapReader map(section, {"every", "level", "trace_steps", "peak_flops", "tensorboard"});
  log::LogConfig config;
  if (auto f = map.get("every")) config.every = read_int(*f, at_least(1));
  if (auto f = map.get("level")) {
    config.level = std::string(f->as_choice<std::string_view>({{"trace", "trace"},
                                                               {"debug", "debug"},
                                                               {"info", "info"},
                                                               {"warn", "warn"},
                                                               {"error", "error"}}));
  }
  if (auto f = map.get("trace_steps")) config.trace_steps = read_trace_steps(*f);
  if (auto f = map.get("peak_flops")) {  // `measured`: the default, as resolved settings write it
    config.peak_flops = f->text() == "measured" ? 0.0 : read_double(*f, above(0));
  }
  if (auto f = map.get("tensorboard")) config.tensorboard = f->as_bool();
  return config;
}

}  // namespace mpipe::config
