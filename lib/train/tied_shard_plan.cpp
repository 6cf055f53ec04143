// The tied copies' exchange on shards: the intersections of the copies' shard parts.
#include "train/tied_shard_plan.h"

#include <algorithm>

#include "core/error.h"
#include "optim/replica_shard.h"

namespace mpipe::train {

MatrixPart owned_part(const TiedCopyPlace& place, int64_t size, int replica, int replicas) {
  check(std::ssize(place.shard_begins) == replicas + 1,
        "owned_part: {} shard begins for {} replicas", place.shard_begins.size(), replicas);
  const auto s = static_cast<size_t>(optim::shard_index(replica, replicas));
  const auto clamp = [&](int64_t at) { return std::clamp<int64_t>(at - place.offset, 0, size); };
  return {clamp(place.shard_begins[s]), clamp(place.shard_begins[s + 1])};
}

std::vector<TiedTransfer> tied_shard_transfers(std::span<const TiedCopyPlace> places, int64_t size,
                                               int replicas) {
  std::vector<TiedTransfer> transfers;
  const auto uses = static_cast<int>(places.size());
  for (int u = 0; u < uses; ++u) {
    for (int a = 0; a < replicas; ++a) {
      const MatrixPart mine = owned_part(places[static_cast<size_t>(u)], size, a, replicas);
      if (mine.empty()) continue;
      for (int v = 0; v < uses; ++v) {
        if (v == u) continue;
        for (int b = 0; b < replicas; ++b) {
          const MatrixPart theirs = owned_part(places[static_cast<size_t>(v)], size, b, replicas);
          const MatrixPart both{std::max(mine.begin, theirs.begin), std::min(mine.end, theirs.end)};
          if (both.empty()) continue;
          transfers.push_back(
              {.from_use = v, .from_replica = b, .to_use = u, .to_replica = a, .part = both});
        }
      }
    }
  }
  return transfers;
}

}  // namespace mpipe::train
