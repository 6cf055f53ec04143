// The layout the daemon gives an experiment that resumes a checkpoint on another world (after a
// lost host, or a restart on other ranks): the plan for the world when it continues the
// checkpoint bit-identically, else the one `mpipe supervise` re-plans a train job on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "supervise/layout.h"

namespace mpipe::serve {

// The layout the daemon plans `experiment` for on `world_size` ranks (job::plan_for_any_world,
// then its `auto` counts resolved). Throws InputError with preflight's line when it has none.
supervise::Layout world_layout(config::Experiment experiment, int world_size);

struct ResumeLayout {
  int64_t step = 0;          // the checkpoint's
  supervise::Layout saved;   // the checkpoint's D and M (its K is not needed: stages 0)
  supervise::Layout layout;  // the layout it resumes on
  bool bit_identical = true;
  // The --set values that give `layout` after the experiment's own; empty when the plan for the
  // world (world_layout) is the layout.
  std::vector<std::string> settings;
};

// How the experiment (`config_path` with `overrides`) resumes the newest committed checkpoint
// of `run_dir` on `world_size` ranks: on world_layout when it keeps the checkpoint's global
// micro-batches (D·M) and bit-identity (supervise::keeps_bit_identity), else on the layout
// supervise::replan picks from the checkpoint's (D·M kept, bit-identity first), using every
// rank, that the planner accepts. Both judged as the resume runs: weight_grads: auto keeping the
// checkpoint's choice (train::checkpoint_weight_grads), in its memory and its bits. nullopt when
// there is no committed checkpoint (or one without its D·M): the plan for the world applies.
// Throws InputError with one line when no layout fits: "<file>: cannot resume step 40 on 2
// ranks: 2 slots left: no layout fits: <the best>: <what it misses>"; or with the resumed run's
// when the checkpoint's record of its weight gradients is not a choice.
std::optional<ResumeLayout> resume_layout(const std::string& config_path,
                                          const std::vector<std::string>& overrides,
                                          const std::string& run_dir, int world_size);

// "resuming step 40 on 2 ranks as 2 stages x 1 replica, 4 micro-batches each, re-planned from
// the checkpoint's 1 replica x 4 micro-batches (bit-identical)"
std::string describe(const ResumeLayout& resume, int world_size);

}  // namespace mpipe::serve
