// One widening of a supervised run: hosts that answer again (a lost host back, or a spare), the
// job stopped at a step boundary with a checkpoint and relaunched wider (a layout change); its log
// lines and record.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervise/layout_change.h"

namespace mpipe::supervise {

struct Widening {
  // `time`: when the supervisor sent its stop; `resumed_from`: the stop's checkpoint (0 steps
  // redone); `seconds`: from the stop signal to the first step past `last_step` logged after the
  // relaunch.
  LayoutChange change;
  std::vector<std::string> returned_hosts;  // those that answered their probe again
};

// The supervisor's line as it stops the job: "supervise: h2 answers again; stopping the job at
// its next step boundary to relaunch it on h1:1,h2:1,h3:1 as 3 stages x 1 replica, ... (now 2
// stages x 1 replica, ... on h1:1,h3:1), bit-identical" (under serve: "..., experiment NAME as
// ...").
std::string widening_stop_line(const Widening& widening);

// Its line as it relaunches: "supervise: widening 1: relaunching on h1:1,h2:1,h3:1 as 3 stages x
// 1 replica, ..., resuming from step 34 (0 steps to redo)".
std::string widening_line(const Widening& widening, int number);

// Its record in metrics.jsonl and summary.json's "widenings": layout_change_json with
// "returned_hosts", the seconds as "seconds".
nlohmann::ordered_json widening_json(const Widening& widening);

}  // namespace mpipe::supervise
