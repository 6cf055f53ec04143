// Where a stage lives under virtual stages, and the peer of each communication op.
#include "plan/placement.h"

#include "core/error.h"

namespace mpipe::plan {

std::vector<int> Placement::ranks_of_stages() const {
  std::vector<int> ranks;
  for (int s = 0; s < num_stages(); ++s) ranks.push_back(rank_of(s));
  return ranks;
}

Peer peer_of(const Op& op, int rank, const Placement& placement) {
  const bool towards_next = op.kind == OpKind::kSendActivation || op.kind == OpKind::kRecvGrad;
  const bool towards_previous = op.kind == OpKind::kRecvActivation || op.kind == OpKind::kSendGrad;
  check(towards_next || towards_previous, "peer_of: {} is not a communication op", to_string(op));
  check(rank >= 0 && rank < placement.num_ranks && op.chunk >= 0 &&
            op.chunk < placement.virtual_stages,
        "peer_of: rank {} chunk {} is not in a pipeline of {} ranks x {} chunks", rank, op.chunk,
        placement.num_ranks, placement.virtual_stages);
  const int stage = placement.stage_of(rank, op.chunk);
  const int peer = towards_next ? stage + 1 : stage - 1;
  check(peer >= 0 && peer < placement.num_stages(),
        "peer_of: rank {} ({}, stage {}) has no stage {} to talk to", rank,
        to_string(op, placement.virtual_stages > 1), stage, peer);
  return {placement.rank_of(peer), placement.chunk_of(peer)};
}

}  // namespace mpipe::plan
