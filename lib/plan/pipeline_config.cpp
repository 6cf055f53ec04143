// The names of the pipeline settings' choices, as experiment files spell them.
#include "plan/pipeline_config.h"

namespace mpipe::plan {

std::string to_string(Recompute recompute) {
  return std::string(name_of(kRecomputeNames, recompute));
}

std::string to_string(WeightGrads weight_grads) {
  return std::string(name_of(kWeightGradsNames, weight_grads));
}

bool keeps_resumed_weight_grads(const PipelineConfig& config) {
  return config.weight_grads == WeightGrads::kAuto &&
         config.resumed_weight_grads != WeightGrads::kAuto &&
         (config.resumed_weight_grads != WeightGrads::kGrouped ||
          config.resumed_weight_group <= config.micro_batches);
}

WeightGrads resolve_weight_grads(const PipelineConfig& config) {
  if (config.weight_grads != WeightGrads::kAuto) return config.weight_grads;
  if (keeps_resumed_weight_grads(config)) return config.resumed_weight_grads;
  const bool keeps_every_micro_batch =
      config.recompute == Recompute::kNever && config.schedule == ScheduleKind::kGpipe;
  return keeps_every_micro_batch ? WeightGrads::kBatched : WeightGrads::kGrouped;
}

std::string to_string(PartitionMode mode) {
  return std::string(name_of(kPartitionModeNames, mode));
}

std::string to_string(Balance balance) { return std::string(name_of(kBalanceNames, balance)); }

}  // namespace mpipe::plan
