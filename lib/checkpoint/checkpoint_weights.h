// Reading a committed checkpoint's weights into memory, as `mpipe export` would write them, for
// the one-process commands that take --checkpoint RUN_DIR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_export.h"
#include "checkpoint/safetensors.h"

namespace mpipe::checkpoint {

struct CheckpointWeights {
  int64_t step = 0;  // the checkpoint read
  std::vector<NamedTensor> tensors;
};

// The weights of the newest committed checkpoint of `run_dir`: export_checkpoint's file (so
// verified as an export verifies it), written to a temporary file that is removed again. Throws
// InputError as export_checkpoint does (`check_model` included).
CheckpointWeights read_checkpoint_weights(const std::string& run_dir,
                                          const ModelCheck& check_model);

}  // namespace mpipe::checkpoint
