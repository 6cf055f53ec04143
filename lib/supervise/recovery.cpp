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
  const LayoutChange& change = recovery.change;
  return fmt::format(
      "supervise: restart {} of at most {}: {}; {}; relaunching on {} (was {} on {}), {}, {}",
      restart, max_restarts, recovery.failure, lost_hosts_text(recovery.lost_hosts),
      relaunch_text(change), to_string(change.old_layout), change.old_hosts, resume_text(change),
      change.bit_identical
          ? "bit-identical"
          : "not bit-identical (a change of D keeps the bits only under weight_grads: tree, "
            "between powers of two)");
}

nlohmann::ordered_json recovery_json(const Recovery& recovery) {
  return layout_change_json(recovery.change,
                            {{"failure", recovery.failure}, {"lost_hosts", recovery.lost_hosts}},
                            "seconds_lost");
}

}  // namespace mpipe::supervise
