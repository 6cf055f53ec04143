// Where a stage lives under virtual stages: chunk c of rank r is stage r + c·K, and whom a
// communication op talks to.
#pragma once

#include "pipeline/op.h"

namespace mpipe::pipeline {

// The K·v stages of a pipeline of K ranks holding v chunks each (the loop placement of Megatron
// and PyTorch: a micro-batch visits ranks 0..K-1 in chunk 0, then again in chunk 1, ...).
struct Placement {
  int num_ranks = 1;       // K
  int virtual_stages = 1;  // v: chunks per rank

  int num_stages() const { return num_ranks * virtual_stages; }
  // The global stage of chunk `chunk` of rank `rank`.
  int stage_of(int rank, int chunk) const { return rank + chunk * num_ranks; }
  int rank_of(int stage) const { return stage % num_ranks; }
  int chunk_of(int stage) const { return stage / num_ranks; }
  bool is_first(int rank, int chunk) const { return stage_of(rank, chunk) == 0; }
  bool is_last(int rank, int chunk) const { return stage_of(rank, chunk) == num_stages() - 1; }
};

// The other end of a message: a rank and the chunk there that receives or sent it.
struct Peer {
  int rank = 0;
  int chunk = 0;
  friend bool operator==(const Peer&, const Peer&) = default;
};

// The peer of communication op `op` (RA, SA, RG or SG) run by rank `rank` for its chunk
// op.chunk: activations go from stage s to s + 1 and gradients from s + 1 to s. Throws
// mpipe::Error for a compute op or a stage that has no such neighbour.
Peer peer_of(const Op& op, int rank, const Placement& placement);

}  // namespace mpipe::pipeline
