// One recovery of a supervised run: the failure, the hosts lost, the old and new layout, the
// steps redone and the seconds lost; its log line and its record in summary.json.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervise/layout.h"

namespace mpipe::supervise {

struct Recovery {
  std::string time;                     // when the supervisor saw the job end, UTC ISO 8601
  std::string failure;                  // "exit status 205: mpirun lost a host's daemon: ..."
  std::vector<std::string> lost_hosts;  // those that no longer answer (may be none: a rank lost)
  std::string old_hosts, new_hosts;     // as --host takes them
  Layout old_layout, new_layout;
  bool bit_identical = true;
  int64_t last_step = 0;     // the last step logged before the failure
  int64_t resumed_from = 0;  // the checkpoint the relaunch resumes (0: from the start)
  // From the last step logged before the failure to the first step past it logged after the
  // relaunch; negative until then.
  double seconds_lost = -1.0;
  // Under `mpipe serve`: the spool's experiment that was running (the daemon relaunched on the
  // new hosts resumes it on the new layout); empty for a train job.
  std::string experiment = {};

  int64_t steps_redone() const { return last_step - resumed_from; }
};

// "h2 does not answer", "h2, h3 do not answer", or "every host answers" (none lost).
std::string lost_hosts_text(const std::vector<std::string>& lost_hosts);

// The supervisor's line for it: "supervise: restart 1 of at most 3: exit status 205 (...);
// h2 does not answer; relaunching on h1:1,h3:1 as 2 stages x 1 replica, ... (was ...),
// resuming from step 4 (2 steps to redo), bit-identical" (under serve: "relaunching on
// h1:1,h3:1, experiment NAME as ...").
std::string recovery_line(const Recovery& recovery, int restart, int max_restarts);

// Its record in summary.json's "recoveries".
nlohmann::ordered_json recovery_json(const Recovery& recovery);

}  // namespace mpipe::supervise
