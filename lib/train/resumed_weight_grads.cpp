// The weight-gradient choice a checkpoint records, written and read back for a resume.
#include "train/resumed_weight_grads.h"

#include <fmt/format.h>

#include <charconv>
#include <string>

#include "core/error.h"
#include "train/run_checkpoint.h"

namespace mpipe::train {

void record_weight_grads(plan::WeightGrads weight_grads, int weight_group,
                         checkpoint::Settings& settings) {
  check(weight_grads != plan::WeightGrads::kAuto, "record_weight_grads: auto is not resolved");
  settings[checkpoint::kResolvedWeightGradsKey] = plan::to_string(weight_grads);
  if (weight_grads == plan::WeightGrads::kGrouped) {
    settings[checkpoint::kResolvedWeightGroupKey] = std::to_string(weight_group);
  }
}

std::optional<ResumedWeightGrads> stored_weight_grads(const checkpoint::Settings& saved,
                                                      const std::string& source) {
  const auto setting = [&saved](const char* key) {
    const auto found = saved.find(key);
    return found == saved.end() ? std::string() : found->second;
  };
  const std::string resolved = setting(checkpoint::kResolvedWeightGradsKey);
  if (resolved.empty()) {  // saved before the choice was recorded: auto's rule then
    if (setting("pipeline.weight_grads") != "auto") return std::nullopt;
    const bool batched =
        setting("pipeline.schedule") == "gpipe" && setting("pipeline.recompute") == "never";
    return ResumedWeightGrads{.weight_grads = batched ? plan::WeightGrads::kBatched
                                                      : plan::WeightGrads::kAccumulate};
  }
  const std::optional<plan::WeightGrads> weight_grads =
      value_named(plan::kWeightGradsNames, resolved);
  check_input(weight_grads && *weight_grads != plan::WeightGrads::kAuto,
              "{}: settings.{}: not a resolved weight_grads: '{}'", source,
              checkpoint::kResolvedWeightGradsKey, resolved);
  ResumedWeightGrads out{.weight_grads = *weight_grads};
  if (out.weight_grads != plan::WeightGrads::kGrouped) return out;
  const std::string group = setting(checkpoint::kResolvedWeightGroupKey);
  const auto [end, error] =
      std::from_chars(group.data(), group.data() + group.size(), out.weight_group);
  check_input(error == std::errc() && end == group.data() + group.size() && out.weight_group >= 1,
              "{}: settings.{}: must be a group of at least 1 micro-batch, got '{}'", source,
              checkpoint::kResolvedWeightGroupKey, group);
  return out;
}

std::optional<ResumedWeightGrads> checkpoint_weight_grads(const std::string& run_dir,
                                                          const StoredSettings& stored) {
  return stored_weight_grads(stored.settings,
                             fmt::format("{}: the checkpoint of step {}", run_dir, stored.step));
}

void keep_weight_grads(const std::optional<ResumedWeightGrads>& resumed,
                       plan::PipelineConfig& pipeline) {
  pipeline.resumed_weight_grads = resumed ? resumed->weight_grads : plan::WeightGrads::kAuto;
  pipeline.resumed_weight_group = resumed ? resumed->weight_group : 0;
}

}  // namespace mpipe::train
