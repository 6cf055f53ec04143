// Re-planning a run on the slots its surviving hosts have (see replan.h).
#include "supervise/replan.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "core/error.h"

namespace mpipe::supervise {

bool keeps_bit_identity(const Layout& old_layout, const Layout& layout, bool tree_weight_grads) {
  if (layout.replicas == old_layout.replicas) return true;
  return tree_weight_grads && std::has_single_bit(static_cast<unsigned>(layout.replicas)) &&
         std::has_single_bit(static_cast<unsigned>(old_layout.replicas));
}

Replan replan(const Layout& old_layout, int slots, bool tree_weight_grads, const LayoutCheck& check,
              SlotUse use) {
  check_input(slots >= 1, "no slot left to run on");
  const int global_micro_batches = old_layout.replicas * old_layout.micro_batches;
  std::vector<Replan> candidates;
  for (int replicas = 1; replicas <= slots; ++replicas) {
    if (global_micro_batches % replicas != 0) continue;
    for (int stages = 1; stages * replicas <= slots; ++stages) {
      if (use == SlotUse::kEvery && stages * replicas != slots) continue;
      const Layout layout{
          .stages = stages, .replicas = replicas, .micro_batches = global_micro_batches / replicas};
      candidates.push_back(
          {.layout = layout,
           .bit_identical = keeps_bit_identity(old_layout, layout, tree_weight_grads)});
    }
  }
  const auto order = [&](const Replan& c) {
    return std::make_tuple(!c.bit_identical, -c.layout.ranks(),
                           std::abs(c.layout.replicas - old_layout.replicas), -c.layout.stages);
  };
  std::ranges::sort(candidates, {}, order);
  std::optional<std::string> first_problem;  // (D=1 always gives a candidate)
  for (const Replan& candidate : candidates) {
    const std::optional<std::string> problem = check(candidate.layout);
    if (!problem) return candidate;
    if (!first_problem) first_problem = to_string(candidate.layout) + ": " + *problem;
  }
  throw InputError(fmt::format("{} slot{} left: no layout fits: {}", slots, slots == 1 ? "" : "s",
                               *first_problem));
}

}  // namespace mpipe::supervise
