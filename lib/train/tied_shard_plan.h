// The tied copies' exchange on shards, planned: which parts of one copy of a tied matrix each
// replica's shard owner sends to the owners of the other copies' shards, when every replica holds
// only its shard of each stage's reduced gradient (optim/replica_shard.h). Pure: no MPI.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mpipe::train {

// Where one use's copy of the tied matrix lies: in the parameter buffer of a chunk of pipeline
// rank `pipeline_rank`, from `offset` on, that buffer cut into `shard_begins` (shard order:
// optim::shard_begins, the same on every replica).
struct TiedCopyPlace {
  int pipeline_rank = 0;
  int64_t offset = 0;
  std::vector<int64_t> shard_begins;
};

// Elements [begin, end) of the matrix (row-major, as every copy holds it).
struct MatrixPart {
  int64_t begin = 0, end = 0;
  bool empty() const { return begin >= end; }
  bool operator==(const MatrixPart&) const = default;
};

// The part of the matrix whose elements `replica`'s shard of the copy at `place` holds (of
// `size` elements, over `replicas` replicas; replica r holds shard optim::shard_index(r)).
MatrixPart owned_part(const TiedCopyPlace& place, int64_t size, int replica, int replicas);

// Elements `part` of use `from_use`'s copy, summed over the replicas in the shard of replica
// `from_replica`, which the owner of use `to_use`'s copy's shard on replica `to_replica` needs.
struct TiedTransfer {
  int from_use = 0, from_replica = 0;
  int to_use = 0, to_replica = 0;
  MatrixPart part;
  bool operator==(const TiedTransfer&) const = default;
};

// Every transfer of the exchange of the copies at `places` (one per use, in use order) of a
// matrix of `size` elements over `replicas` replicas: for each use u (ascending), replica a
// (ascending) and other use v (ascending), the intersection of a's part of u with each replica
// b's part of v (b ascending), when not empty. The owner of a part of u then holds every use's
// gradient of its elements and adds them in use order, as the unsharded sum does. A transfer
// whose two ends are one rank (the same replica and pipeline rank) moves nothing over MPI.
std::vector<TiedTransfer> tied_shard_transfers(std::span<const TiedCopyPlace> places, int64_t size,
                                               int replicas);

}  // namespace mpipe::train
