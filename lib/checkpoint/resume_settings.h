// Resume settings: which changes to an experiment's resolved settings a resumed run may make.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mpipe::checkpoint {

// Every resolved setting of a run as key path -> value text ("optimizer.lr" -> "0.001"), as
// config::resolved_settings makes it; meta.json stores it under "settings".
using Settings = std::map<std::string, std::string>;

// The key under which a checkpoint records its number of global micro-batches per step,
// pipeline.micro_batches x data_parallel (resolved), which a resume must keep.
inline constexpr const char* kGlobalMicroBatchesKey = "pipeline.global_micro_batches";

// The keys under which a checkpoint records weight_grads as its run resolved it ("accumulate",
// "batched", "grouped" or "tree") and, under grouped, its group ("4"): what weight_grads: auto
// keeps on a resume (train/resumed_weight_grads.h). A resume may change them.
inline constexpr const char* kResolvedWeightGradsKey = "pipeline.resolved_weight_grads";
inline constexpr const char* kResolvedWeightGroupKey = "pipeline.resolved_weight_group";

struct SettingChanges {
  std::vector<std::string> refused;  // "optimizer.lr: 0.001 → 0.01", in key order
  std::vector<std::string> allowed;  // "train.steps: 6 → 12"
};

// Compares the settings a checkpoint was saved with to this run's. Allowed to change:
// train.steps, optimizer.schedule.total_steps (the learning-rate schedule's length, which
// train.steps does not move on a resume), train.eval_every/eval_batches/eval_batch_size/
// eval_bleu_sentences, train.on_nonfinite/max_skips_in_a_row, log.*, checkpoint.*, and the
// pipeline layout (stages, data_parallel, micro_batches, schedule, recompute, weight_grads and
// its resolved choice, partition) as long as kGlobalMicroBatchesKey is the same. Anything else the
// mathematics depends on (model, data, optimizer, seed, batch size, ...) is refused. A key missing
// on one side counts as a change under model.* (a layer or a layer attribute added or removed);
// elsewhere it is a setting one mpipe version has and the other lacks, and is ignored.
SettingChanges compare_settings(const Settings& saved, const Settings& now);

}  // namespace mpipe::checkpoint
