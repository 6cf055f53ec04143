// Resume settings: the keys a resumed run may change, and the differences it may not make.
#include "checkpoint/resume_settings.h"

#include <fmt/format.h>

#include <array>
#include <set>
#include <string_view>

namespace mpipe::checkpoint {
namespace {

// Keys (or, ending in '.', key prefixes) that do not change the trained weights' trajectory.
constexpr std::array<std::string_view, 23> kMayChange = {
    "train.steps",
    "optimizer.schedule.total_steps",  // said explicitly: how the schedule goes on
    "train.on_nonfinite",
    "train.max_skips_in_a_row",
    "train.eval_every",
    "train.eval_batches",
    "train.eval_batch_size",
    "train.eval_bleu_sentences",
    "log.",
    "checkpoint.",
    "pipeline.stages",
    "pipeline.data_parallel",
    "pipeline.micro_batches",
    "pipeline.virtual_stages",
    "pipeline.schedule",
    "pipeline.recompute",
    "pipeline.weight_grads",
    "pipeline.weight_group",
    kResolvedWeightGradsKey,
    kResolvedWeightGroupKey,
    "pipeline.partition",
    "pipeline.memory_limit",
    "optimizer.shard_across_replicas",  // the same bits either way; checkpoints hold whole state
};

bool may_change(const std::string& key) {
  for (std::string_view allowed : kMayChange) {
    if (allowed.ends_with('.') ? key.starts_with(allowed) : key == allowed) return true;
  }
  return false;
}

std::string label(const std::string& key) {
  return key == kGlobalMicroBatchesKey ? "pipeline.micro_batches × data_parallel" : key;
}

}  // namespace

SettingChanges compare_settings(const Settings& saved, const Settings& now) {
  std::set<std::string> keys;
  for (const auto& [key, value] : saved) keys.insert(key);
  for (const auto& [key, value] : now) keys.insert(key);
  SettingChanges changes;
  for (const std::string& key : keys) {
    const auto old_value = saved.find(key);
    const auto new_value = now.find(key);
    const bool in_both = old_value != saved.end() && new_value != now.end();
    if (!in_both && !key.starts_with("model.")) continue;
    const std::string before = old_value != saved.end() ? old_value->second : "(none)";
    const std::string after = new_value != now.end() ? new_value->second : "(none)";
    if (in_both && before == after) continue;
    const std::string change = fmt::format("{}: {} → {}", label(key), before, after);
    (may_change(key) ? changes.allowed : changes.refused).push_back(change);
  }
  return changes;
}

}  // namespace mpipe::checkpoint
