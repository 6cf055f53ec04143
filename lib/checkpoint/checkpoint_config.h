// Checkpoint settings (the `checkpoint:` section of an experiment).
#pragma once

#include <cstdint>

namespace mpipe::checkpoint {

struct CheckpointConfig {
  int64_t every = 0;  // steps between checkpoints; 0 = only at the end
  int keep = 3;       // newest checkpoints kept in the run directory
  // Each shard also copied over MPI to a rank on another host, the commit written on every host
  // that holds a shard or a copy, and a resume gathering the shards a rank lacks from the ranks
  // that hold them (docs/design/checkpoints.md, "Peer copies").
  bool peer_copy = false;
};

}  // namespace mpipe::checkpoint
