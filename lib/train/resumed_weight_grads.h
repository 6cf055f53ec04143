// The weight gradients a checkpoint records that its run summed with, and what weight_grads: auto
// keeps of them on a resume.
#pragma once

#include <optional>
#include <string>

#include "checkpoint/resume_settings.h"
#include "plan/pipeline_config.h"

namespace mpipe::train {

// What a resumed run's weight_grads: auto takes from its checkpoint (plan::PipelineConfig::
// resumed_weight_grads, resumed_weight_group).
struct ResumedWeightGrads {
  plan::WeightGrads weight_grads = plan::WeightGrads::kAccumulate;
  int weight_group = 0;  // under kGrouped; 0 otherwise
};

// Adds checkpoint::kResolvedWeightGradsKey (and kResolvedWeightGroupKey) for a run that sums its
// weight gradients as `weight_grads` (resolved, not kAuto) with `weight_group` (under kGrouped) to
// `settings`.
void record_weight_grads(plan::WeightGrads weight_grads, int weight_group,
                         checkpoint::Settings& settings);

// The choice a checkpoint saved with `saved` records; for one saved before the keys existed whose
// pipeline.weight_grads was auto, auto as it then resolved (batched under schedule: gpipe with
// recompute: never as configured, else accumulate); nullopt for such a checkpoint with another
// setting. Throws InputError naming `source` (its meta.json) for a value that is not a choice.
std::optional<ResumedWeightGrads> stored_weight_grads(const checkpoint::Settings& saved,
                                                      const std::string& source);

}  // namespace mpipe::train
