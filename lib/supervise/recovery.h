// One recovery of a supervised run: the failure, the hosts lost, and the layout change of its
// relaunch (the steps redone, the seconds lost); its log line and its record in summary.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervise/layout_change.h"

namespace mpipe::supervise {

struct Recovery {
  // `time`: when the supervisor saw the job end; `last_step`: the last step logged before the
  // failure; `seconds`: the seconds lost, from that step to the first step past it logged after
  // the relaunch.
  LayoutChange change;
  std::string failure;                  // "exit status 205: mpirun lost a host's daemon: ..."
  std::vector<std::string> lost_hosts;  // those that no longer answer (may be none: a rank lost)
};

// "h2 does not answer", "h2, h3 do not answer", or "every host answers" (none lost).
std::string lost_hosts_text(const std::vector<std::string>& lost_hosts);

// The supervisor's line for it: "supervise: restart 1 of at most 3: exit status 205 (...);
// h2 does not answer; relaunching on h1:1,h3:1 as 2 stages x 1 replica, ... (was ...),
// resuming from step 4 (2 steps to redo), bit-identical" (under serve: "relaunching on
// h1:1,h3:1, experiment NAME as ...").
std::string recovery_line(const Recovery& recovery, int restart, int max_restarts);

// Its record in metrics.jsonl and summary.json's "recoveries": layout_change_json with "failure"
// and "lost_hosts", the seconds as "seconds_lost".
nlohmann::ordered_json recovery_json(const Recovery& recovery);

}  // namespace mpipe::supervise
