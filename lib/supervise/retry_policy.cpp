// When a supervisor stops relaunching a job that lost a host (see retry_policy.h).
#include "supervise/retry_policy.h"

#include <fmt/format.h>

namespace mpipe::supervise {

std::optional<std::string> give_up_reason(int restarts_done, int max_restarts,
                                          const std::vector<HostSlots>& answering) {
  if (restarts_done >= max_restarts) {
    return fmt::format("restarted {} time{} already (--max-restarts {})", restarts_done,
                       restarts_done == 1 ? "" : "s", max_restarts);
  }
  if (answering.empty()) return std::string("no host answers");
  return std::nullopt;
}

std::optional<std::string> no_host_lost_reason(const JobEnd& end,
                                               const std::vector<HostSlots>& hosts,
                                               const std::vector<HostSlots>& answering) {
  if (!end.lost_if_a_host_is_gone || answering.size() < hosts.size()) return std::nullopt;
  return std::string("every host answers, so no host was lost");
}

}  // namespace mpipe::supervise
