// Growing a supervised job back (see grow_back.h).
#include "supervise/grow_back.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace mpipe::supervise {

namespace {

bool holds(const std::vector<HostSlots>& hosts, const std::string& host) {
  return std::ranges::any_of(hosts, [&](const HostSlots& h) { return h.host == host; });
}

}  // namespace

std::vector<HostSlots> parse_spares(std::string_view text, const std::vector<HostSlots>& hosts) {
  std::vector<HostSlots> spares = parse_host_list(text, "--spare");
  for (const HostSlots& spare : spares) {
    check_input(!holds(hosts, spare.host), "--spare: {} is in --hosts too", spare.host);
  }
  return spares;
}

std::vector<HostSlots> host_pool(const std::vector<HostSlots>& hosts,
                                 const std::vector<HostSlots>& spares) {
  std::vector<HostSlots> pool = hosts;
  pool.insert(pool.end(), spares.begin(), spares.end());
  return pool;
}

std::vector<HostSlots> missing_hosts(const std::vector<HostSlots>& pool,
                                     const std::vector<HostSlots>& current) {
  std::vector<HostSlots> missing;
  for (const HostSlots& host : pool) {
    if (!holds(current, host.host)) missing.push_back(host);
  }
  return missing;
}

std::vector<HostSlots> chosen_hosts(const std::vector<HostSlots>& pool,
                                    const std::vector<HostSlots>& answering, int width) {
  std::vector<HostSlots> chosen;
  int slots = 0;
  for (const HostSlots& host : pool) {
    if (!holds(answering, host.host) || slots + host.slots > width) continue;
    chosen.push_back(host);
    slots += host.slots;
  }
  return chosen;
}

bool looks_for_hosts(const std::vector<HostSlots>& current, int width, double regrow_interval_s,
                     bool user_stop) {
  return regrow_interval_s > 0 && !user_stop && total_slots(current) < width;
}

std::optional<std::vector<HostSlots>> wider_hosts(const std::vector<HostSlots>& pool,
                                                  const std::vector<HostSlots>& current,
                                                  const std::vector<HostSlots>& returned,
                                                  int width) {
  std::vector<HostSlots> answering = current;
  answering.insert(answering.end(), returned.begin(), returned.end());
  std::vector<HostSlots> wider = chosen_hosts(pool, answering, width);
  if (total_slots(wider) <= total_slots(current)) return std::nullopt;
  return wider;
}

std::string answer_again_text(const std::vector<HostSlots>& returned) {
  std::string names;
  for (const HostSlots& host : returned) names += (names.empty() ? "" : ", ") + host.host;
  return fmt::format("{} answer{} again", names, returned.size() == 1 ? "s" : "");
}

std::variant<Replan, std::string> plan_wider(const Layout& layout, int slots,
                                             bool tree_weight_grads, const LayoutCheck& check,
                                             SlotUse use) {
  Replan plan;
  try {
    plan = replan(layout, slots, tree_weight_grads, check, use);
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  if (plan.layout.ranks() <= layout.ranks()) {
    return fmt::format(
        "no layout of more than {} rank{} on {} slots that the planner accepts keeps the bits",
        layout.ranks(), layout.ranks() == 1 ? "" : "s", slots);
  }
  if (!plan.bit_identical) {
    return fmt::format(
        "{} would not be bit-identical (a change of D keeps the bits only under weight_grads: "
        "tree, between powers of two)",
        to_string(plan.layout));
  }
  return plan;
}

GrowStopEnd read_grow_stop(const JobEnd& end, bool user_stop, bool job_finished) {
  if (user_stop || end.outcome != JobOutcome::kDone) return GrowStopEnd::kOther;
  return job_finished ? GrowStopEnd::kFinished : GrowStopEnd::kWiden;
}

}  // namespace mpipe::supervise
