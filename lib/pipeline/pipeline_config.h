// Pipeline settings (the `pipeline:` section of an experiment) and the names of their choices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpipe::pipeline {

enum class ScheduleKind { kGpipe, kOneFOneB };
// What a stage stores per micro-batch between forward and backward (torchgpipe's checkpoint).
enum class Recompute {
  kAlways,      // only the stage input; forward re-run before backward
  kExceptLast,  // like kAlways but the last micro-batch keeps everything
  kNever,       // everything the layers return from forward
  kPerLayer,    // every layer's input; backward re-runs one layer's forward at a time
  kAuto,        // the planner's choice (pipeline/planner.h); never reaches a Stage
};

// How the layers are split into stages.
enum class PartitionMode {
  kAuto,     // the exact min-max partition of the predicted stage times, within memory_limit
  kUniform,  // by layer count: counts differ by at most one, earlier stages get the extra layers
  kManual,   // the counts in `partition`
};

struct PipelineConfig {
  int stages = 1;         // K; 0 = auto (world size / data_parallel)
  int data_parallel = 1;  // D; 0 = auto (world size / stages)
  int micro_batches = 1;  // M
  ScheduleKind schedule = ScheduleKind::kGpipe;
  Recompute recompute = Recompute::kAuto;
  PartitionMode partition_mode = PartitionMode::kAuto;
  std::vector<int> partition;  // layers per stage (kManual only)
  int64_t memory_limit = 0;    // predicted peak bytes allowed per rank; 0 = no limit
};

// Their names in experiment files: "always", "except_last", "never", "per_layer", "auto"; "auto",
// "uniform", "manual".
std::string to_string(Recompute recompute);
std::string to_string(PartitionMode mode);

}  // namespace mpipe::pipeline
