// What a recovery and a widening share: a supervised job relaunched on other hosts with another
// layout, resuming a checkpoint; the parts of their log lines and records that say so.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "supervise/layout.h"

namespace mpipe::supervise {

struct LayoutChange {
  std::string time;                  // UTC ISO 8601: a recovery's failure, a widening's stop
  std::string old_hosts, new_hosts;  // as --host takes them
  Layout old_layout, new_layout;
  bool bit_identical = true;
  int64_t last_step = 0;     // the last step logged before the relaunch
  int64_t resumed_from = 0;  // the checkpoint the relaunch resumes (0: from the start)
  // To the first step past `last_step` logged after the relaunch, from the last step logged
  // before a recovery's failure, from a widening's stop signal; negative until then.
  double seconds = -1.0;
  // Under `mpipe serve`: the spool's experiment the relaunched daemon resumes on the new layout;
  // empty for a train job.
  std::string experiment = {};

  int64_t steps_redone() const { return last_step - resumed_from; }
};

// Where the job goes: "h1:1,h3:1 as 2 stages x 1 replica, 4 micro-batches each" (under serve:
// "h1:1,h3:1, experiment NAME as ...").
std::string relaunch_text(const LayoutChange& change);

// "resuming from step 4 (2 steps to redo)", "resuming from the start (0 steps to redo)".
std::string resume_text(const LayoutChange& change);

// Its record: "time", then `own` (the record's own keys: a recovery's failure and lost hosts, a
// widening's returned hosts), then "old_hosts", "new_hosts", "old_layout", "new_layout",
// "bit_identical", "last_step", "resumed_from", "steps_redone", the seconds under `seconds_key`
// once measured, and "experiment" under serve.
nlohmann::ordered_json layout_change_json(const LayoutChange& change,
                                          const nlohmann::ordered_json& own,
                                          std::string_view seconds_key);

}  // namespace mpipe::supervise
