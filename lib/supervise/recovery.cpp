// One recovery of a supervised run: its log line and its record (see recovery.h).
#include "supervise/recovery.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mpipe::supervise {

std::string lost_hosts_text(const std::vector<std::string>& lost_hosts) {
  if (lost_hosts.empty()) return "every host answers";
  return fmt::format("{} {} not answer", fmt::join(lost_hosts, ", "),
                     lost_hosts.size() == 1 ? "does" : "do");
}

std::string recovery_line(const Recovery& recovery, int restart, int max_restarts) {
  const int64_t redo = recovery.steps_redone();
  return fmt::format(
      "supervise: restart {} of at most {}: {}; {}; relaunching on {}{} as {} (was {} on {}), "
      "resuming from {} ({} step{} to redo), {}",
      restart, max_restarts, recovery.failure, lost_hosts_text(recovery.lost_hosts),
      recovery.new_hosts, recovery.experiment.empty() ? "" : ", experiment " + recovery.experiment,
      to_string(recovery.new_layout), to_string(recovery.old_layout), recovery.old_hosts,
      recovery.resumed_from > 0 ? fmt::format("step {}", recovery.resumed_from)
                                : std::string("the start"),
      redo, redo == 1 ? "" : "s",
      recovery.bit_identical
          ? "bit-identical"
          : "not bit-identical (a change of D keeps the bits only under weight_grads: tree, "
            "between powers of two)");
}

nlohmann::ordered_json recovery_json(const Recovery& recovery) {
  nlohmann::ordered_json record = {{"time", recovery.time},
                                   {"failure", recovery.failure},
                                   {"lost_hosts", recovery.lost_hosts},
                                   {"old_hosts", recovery.old_hosts},
                                   {"new_hosts", recovery.new_hosts},
                                   {"old_layout", layout_json(recovery.old_layout)},
                                   {"new_layout", layout_json(recovery.new_layout)},
                                   {"bit_identical", recovery.bit_identical},
                                   {"last_step", recovery.last_step},
                                   {"resumed_from", recovery.resumed_from},
                                   {"steps_redone", recovery.steps_redone()}};
  if (recovery.seconds_lost >= 0.0) record["seconds_lost"] = recovery.seconds_lost;
  if (!recovery.experiment.empty()) record["experiment"] = recovery.experiment;
  return record;
}

}  // namespace mpipe::supervise
