// Where a stage lives under virtual stages (the loop placement, chunk c of rank r is stage r + c·K,
// or ZB-V's V), and whom a communication op talks to.
#pragma once

#include <vector>

#include "plan/op.h"

namespace mpipe::plan {

// How a rank's chunks map to global stages; the schedule chooses (plan::placement_for).
enum class PlacementKind {
  // Chunk c of rank r is stage r + c·K (Megatron's and PyTorch's interleaved placement): a
  // micro-batch visits ranks 0..K-1 in chunk 0, then again in chunk 1, ...
  kLoop,
  // ZB-V's (Qi et al. 2024): the even chunks run down the ranks and the odd ones back up, so with
  // v = 2 chunk 0 of rank r is stage r and chunk 1 is stage 2K-1-r; rank K-1 holds stages K-1
  // and K, and rank 0 both the first and the last stage.
  kV,
};

// The K·v stages of a pipeline of K ranks holding v chunks each, placed as `kind` says.
struct Placement {
  int num_ranks = 1;       // K
  int virtual_stages = 1;  // v: chunks per rank
  PlacementKind kind = PlacementKind::kLoop;

  int num_stages() const { return num_ranks * virtual_stages; }
  // The global stage of chunk `chunk` of rank `rank`.
  int stage_of(int rank, int chunk) const {
    return chunk * num_ranks + (runs_up(chunk) ? num_ranks - 1 - rank : rank);
  }
  int rank_of(int stage) const {
    const int position = stage % num_ranks;
    return runs_up(chunk_of(stage)) ? num_ranks - 1 - position : position;
  }
  int chunk_of(int stage) const { return stage / num_ranks; }
  bool is_first(int rank, int chunk) const { return stage_of(rank, chunk) == 0; }
  bool is_last(int rank, int chunk) const { return stage_of(rank, chunk) == num_stages() - 1; }
  // rank_of(s) for each of the K·v stages, in order.
  std::vector<int> ranks_of_stages() const;

 private:
  // Whether chunk `chunk`'s stages go from rank K-1 up to rank 0 (the V's odd chunks).
  bool runs_up(int chunk) const { return kind == PlacementKind::kV && chunk % 2 == 1; }
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

}  // namespace mpipe::plan
