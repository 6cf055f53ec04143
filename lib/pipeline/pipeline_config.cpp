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
