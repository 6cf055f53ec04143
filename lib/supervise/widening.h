// One widening of a supervised run: hosts that answer again (a lost host back, or a spare), the
// job stopped at a step boundary with a checkpoint and relaunched wider; its log line and record.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervise/layout.h"

namespace mpipe::supervise {

struct Widening {
  std::string time;                         // when the supervisor sent its stop, UTC ISO 8601
  std::vector<std::string> returned_hosts;  // those that answered their probe again
  std::string old_hosts, new_hosts;         // as --host takes them
  Layout old_layout, new_layout;
  bool bit_identical = true;
  int64_t last_step = 0;     // the last step logged before the relaunch
  int64_t resumed_from = 0;  // the checkpoint the relaunch resumes (the stop's: 0 steps redone)
  // From the supervisor's stop signal to the first step past `last_step` logged after the
  // relaunch; negative until then.
  double seconds = -1.0;
  // Under `mpipe serve`: the spool's experiment the daemon resumes wider; empty for a train job.
  std::string experiment = {};

  int64_t steps_redone() const { return last_step - resumed_from; }
};

// The supervisor's line as it stops the job: "supervise: h2 answers again; stopping the job at
// its next step boundary to relaunch it on h1:1,h2:1,h3:1 as 3 stages x 1 replica, ... (now 2
// stages x 1 replica, ... on h1:1,h3:1), bit-identical" (under serve: "..., experiment NAME as
// ...").
std::string widening_stop_line(const Widening& widening);

// Its line as it relaunches: "supervise: widening 1: relaunching on h1:1,h2:1,h3:1 as 3 stages x
// 1 replica, ..., resuming from step 34 (0 steps to redo)".
std::string widening_line(const Widening& widening, int number);

// Its record in summary.json's "widenings".
nlohmann::ordered_json widening_json(const Widening& widening);

}  // namespace mpipe::supervise
