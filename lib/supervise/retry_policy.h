// When a supervisor stops relaunching a job that lost a host: a bounded number of restarts, and
// at least one host that still answers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "supervise/host_list.h"

namespace mpipe::supervise {

// Why the supervisor gives up instead of relaunching after `restarts_done` restarts with
// `answering` hosts left (one line), nullopt when it relaunches.
std::optional<std::string> give_up_reason(int restarts_done, int max_restarts,
                                          const std::vector<HostSlots>& answering);

}  // namespace mpipe::supervise
