// Pipeline settings (the `pipeline:` section of an experiment).
#pragma once

#include <cstdint>
#include <vector>

namespace mpipe::pipeline {

enum class ScheduleKind { kGpipe, kOneFOneB };
// What a stage stores per micro-batch between forward and backward (torchgpipe's checkpoint).
enum class Recompute {
  kAlways,      // only the stage input; forward re-run before backward
  kExceptLast,  // like kAlways but the last micro-batch keeps everything
  kNever,       // everything the layers return from forward
};

struct PipelineConfig {
  int stages = 1;         // K; 0 = auto (world size / data_parallel)
  int data_parallel = 1;  // D; 0 = auto (world size / stages)
  int micro_batches = 1;  // M
  ScheduleKind schedule = ScheduleKind::kGpipe;
  Recompute recompute = Recompute::kAlways;
  std::vector<int> partition;  // layers per stage; empty = uniform
};

}  // namespace mpipe::pipeline
