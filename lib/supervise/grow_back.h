// Growing a supervised job back: which hosts it may use (--hosts, then the --spare ones), when it
// looks for hosts that answer again (--regrow-interval), whether a wider layout is worth a stop,
// and what the job's end after the supervisor's own stop means.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "supervise/host_list.h"
#include "supervise/job_outcome.h"
#include "supervise/replan.h"

namespace mpipe::supervise {

// Parses --spare (`s1:2,s2`, as --hosts): hosts the job does not start on, taken after a lost
// host. Throws InputError naming --spare as parse_host_list does, and for a host that `hosts`
// name too: "--spare: h2 is in --hosts too".
std::vector<HostSlots> parse_spares(std::string_view text, const std::vector<HostSlots>& hosts);

// Every host a job may run on: `hosts`, then `spares`, in that order (rank 0 stays on the first).
std::vector<HostSlots> host_pool(const std::vector<HostSlots>& hosts,
                                 const std::vector<HostSlots>& spares);

// The hosts of `pool` that `current` does not hold: those lost, and the spares not yet taken.
std::vector<HostSlots> missing_hosts(const std::vector<HostSlots>& pool,
                                     const std::vector<HostSlots>& current);

// The hosts a launch takes: those of `pool` that `answering` holds, in the pool's order, each while
// the slots so far and its own stay within `width` (the first launch's slots: a job never grows
// past the width it started with).
std::vector<HostSlots> chosen_hosts(const std::vector<HostSlots>& pool,
                                    const std::vector<HostSlots>& answering, int width);

// Whether a running job on `current` looks for hosts that answer again: growing is on
// (`regrow_interval_s` > 0), no user's stop signal came (`user_stop`: passed on, or held until the
// job got under way), and it has fewer slots than `width`.
bool looks_for_hosts(const std::vector<HostSlots>& current, int width, double regrow_interval_s,
                     bool user_stop);

// The hosts of a wider launch once `returned` (hosts of missing_hosts) answer their probe again:
// chosen_hosts of `current` and `returned`; nullopt when that adds no slot (none returned: each
// failed its probe again; or no room left within `width`).
std::optional<std::vector<HostSlots>> wider_hosts(const std::vector<HostSlots>& pool,
                                                  const std::vector<HostSlots>& current,
                                                  const std::vector<HostSlots>& returned,
                                                  int width);

// "h2 answers again", "h2, h4 answer again".
std::string answer_again_text(const std::vector<HostSlots>& returned);

// The layout a job planned as `layout` widens to on `slots` (replan's: the global micro-batches
// kept, the planner's `check`), or why it stays as it is (one line): no layout with more ranks
// than `layout` that keeps bit-identity fits (staying narrow always keeps it). `use`:
// SlotUse::kEvery for the serve daemon (every slot a rank).
std::variant<Replan, std::string> plan_wider(const Layout& layout, int slots,
                                             bool tree_weight_grads, const LayoutCheck& check,
                                             SlotUse use = SlotUse::kAtMost);

// What the end of a job the supervisor stopped itself to widen it means.
enum class GrowStopEnd {
  kWiden,  // stopped by the supervisor's SIGUSR1 with a checkpoint (exit status 0): relaunch wider
  kFinished,  // it finished meanwhile (`job_finished`): done, as without the stop
  kOther,     // a user's stop came too (`user_stop`), or a failure or a lost host: as without it
};
GrowStopEnd read_grow_stop(const JobEnd& end, bool user_stop, bool job_finished);

}  // namespace mpipe::supervise
