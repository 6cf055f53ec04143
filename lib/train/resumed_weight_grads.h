// The weight gradients a checkpoint records that its run summed with, and what weight_grads: auto
// keeps of them on a resume.
#pragma once

#include <optional>
#include <string>

#include "checkpoint/resume_settings.h"
#include "plan/pipeline_config.h"

namespace mpipe::train {

struct StoredSettings;  // train/run_checkpoint.h

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

// stored_weight_grads of `stored`, a committed checkpoint of `run_dir` (train::
// newest_stored_settings), its errors naming "<run_dir>: the checkpoint of step <step>": what a
// resume of it keeps, read the same wherever a resume is planned (the run's preflight, the daemon's
// and the supervisor's re-plans).
std::optional<ResumedWeightGrads> checkpoint_weight_grads(const std::string& run_dir,
                                                          const StoredSettings& stored);

// Sets pipeline.resumed_weight_grads and resumed_weight_group to `resumed` (nullopt: a new run's,
// kAuto and 0), so that weight_grads: auto resolves, and the plan holds memory, as on a resume of
// the checkpoint that records it.
void keep_weight_grads(const std::optional<ResumedWeightGrads>& resumed,
                       plan::PipelineConfig& pipeline);

}  // namespace mpipe::train
