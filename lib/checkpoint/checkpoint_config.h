// Checkpoint settings (the `checkpoint:` section of an experiment).
#pragma once

#include <cstdint>

namespace mpipe::checkpoint {

struct CheckpointConfig {
  int64_t every = 0;  // steps between checkpoints; 0 = only at the end
  int keep = 3;       // newest checkpoints kept in the run directory
};

}  // namespace mpipe::checkpoint
