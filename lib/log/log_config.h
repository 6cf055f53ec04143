// Logging settings (the `log:` section of an experiment).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpipe::log {

struct LogConfig {
  int64_t every = 10;          // steps between progress lines and metrics records
  std::string level = "info";  // trace, debug, info, warn, error
  // Steps (counted from 1, ascending) whose timeline every rank records into trace.json.
  std::vector<int64_t> trace_steps;
  // Each rank's peak FLOP/s for the MFU; 0: measured at start-up by a short GEMM on every rank.
  double peak_flops = 0.0;
  // Rank 0 also writes the metrics records' numbers as TensorBoard scalars beside metrics.jsonl.
  bool tensorboard = false;
};

}  // namespace mpipe::log
