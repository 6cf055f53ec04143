// The names of the pipeline settings' choices, as experiment files spell them.
#include "pipeline/pipeline_config.h"

namespace mpipe::pipeline {

std::string to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::kAlways:
      return "always";
    case Recompute::kExceptLast:
      return "except_last";
    case Recompute::kNever:
      return "never";
    case Recompute::kPerLayer:
      return "per_layer";
    case Recompute::kAuto:
      return "auto";
  }
  return "unknown";
}

std::string to_string(WeightGrads weight_grads) {
  switch (weight_grads) {
    case WeightGrads::kAccumulate:
      return "accumulate";
    case WeightGrads::kBatched:
      return "batched";
    case WeightGrads::kAuto:
      return "auto";
  }
  return "unknown";
}

WeightGrads resolve_weight_grads(const PipelineConfig& config) {
  if (config.weight_grads != WeightGrads::kAuto) return config.weight_grads;
  const bool keeps_every_micro_batch =
      config.recompute == Recompute::kNever && config.schedule == ScheduleKind::kGpipe;
  return keeps_every_micro_batch ? WeightGrads::kBatched : WeightGrads::kAccumulate;
}

std::string to_string(PartitionMode mode) {
  switch (mode) {
    case PartitionMode::kAuto:
      return "auto";
    case PartitionMode::kUniform:
      return "uniform";
    case PartitionMode::kManual:
      return "manual";
  }
  return "unknown";
}

}  // namespace mpipe::pipeline
