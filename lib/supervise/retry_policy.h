// When a supervisor stops relaunching a job that lost a host: a bounded number of restarts, at
// least one host that still answers, and after a failed launch, one that does not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "supervise/host_list.h"
#include "supervise/job_outcome.h"

namespace mpipe::supervise {

// Why the supervisor gives up instead of relaunching after `restarts_done` restarts with
// `answering` hosts left (one line), nullopt when it relaunches.
std::optional<std::string> give_up_reason(int restarts_done, int max_restarts,
                                          const std::vector<HostSlots>& answering);

// A job end that is a lost host only if a host is gone (JobEnd::lost_if_a_host_is_gone): with
// every one of `hosts` `answering` its probe, why it is not relaunched (one line); else nullopt.
std::optional<std::string> no_host_lost_reason(const JobEnd& end,
                                               const std::vector<HostSlots>& hosts,
                                               const std::vector<HostSlots>& answering);

}  // namespace mpipe::supervise
