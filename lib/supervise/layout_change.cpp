// What a recovery and a widening share (see layout_change.h).
#include "supervise/layout_change.h"

#include <fmt/format.h>

namespace mpipe::supervise {

std::string relaunch_text(const LayoutChange& change) {
  return fmt::format("{}{} as {}", change.new_hosts,
                     change.experiment.empty() ? "" : ", experiment " + change.experiment,
                     to_string(change.new_layout));
}

std::string resume_text(const LayoutChange& change) {
  const int64_t redo = change.steps_redone();
  return fmt::format("resuming from {} ({} step{} to redo)",
                     change.resumed_from > 0 ? fmt::format("step {}", change.resumed_from)
                                             : std::string("the start"),
                     redo, redo == 1 ? "" : "s");
}

nlohmann::ordered_json layout_change_json(const LayoutChange& change,
                                          const nlohmann::ordered_json& own,
                                          std::string_view seconds_key) {
  nlohmann::ordered_json record = {{"time", change.time}};
  for (const auto& [key, value] : own.items()) record[key] = value;
  record["old_hosts"] = change.old_hosts;
  record["new_hosts"] = change.new_hosts;
  record["old_layout"] = layout_json(change.old_layout);
  record["new_layout"] = layout_json(change.new_layout);
  record["bit_identical"] = change.bit_identical;
  record["last_step"] = change.last_step;
  record["resumed_from"] = change.resumed_from;
  record["steps_redone"] = change.steps_redone();
  if (change.seconds >= 0.0) record[std::string(seconds_key)] = change.seconds;
  if (!change.experiment.empty()) record["experiment"] = change.experiment;
  return record;
}

}  // namespace mpipe::supervise
