// Re-planning a run on the slots its surviving hosts have: the layout that keeps the global
// batch and the global micro-batch order (so the trajectory), preferring bit-identity, then the
// most ranks, within what the planner accepts (partition, memory limit).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "supervise/layout.h"

namespace mpipe::supervise {

// Why the planner refuses `layout` (one line: the key and what is missing), nullopt if it fits.
using LayoutCheck = std::function<std::optional<std::string>(const Layout&)>;

struct Replan {
  Layout layout;
  // Whether the new layout ends bit-identical to the old one: the same D (any K), or a change of
  // D between powers of two under weight_grads: tree (docs/design/bit_identity.md).
  bool bit_identical = true;
};

// Whether a run on `old_layout` and one on `layout` end with the same bits.
bool keeps_bit_identity(const Layout& old_layout, const Layout& layout, bool tree_weight_grads);

// Which layouts a re-plan may choose: any that `slots` ranks hold (a supervised train job is
// launched on the ranks its layout needs), or only those that use every slot (the serve daemon,
// whose every rank takes part in each experiment).
enum class SlotUse { kAtMost, kEvery };

// The layout for `slots` ranks at most (`use`: kEvery, exactly): D divides the global
// micro-batches D·M of `old_layout` (M = D·M / D each), K >= 1. Candidates are ordered:
// bit-identical first, then the most ranks, then D closest to the old D, then the most stages;
// the first one `check` accepts is chosen. Throws InputError with one line when none fits: "N
// slots left: no layout fits: <the first candidate>: <its problem>", or when `slots` < 1.
Replan replan(const Layout& old_layout, int slots, bool tree_weight_grads, const LayoutCheck& check,
              SlotUse use = SlotUse::kAtMost);

}  // namespace mpipe::supervise
