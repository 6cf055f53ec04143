// Replica shards: contiguous, cut on the norm's blocks, in shard order (bit-reversed replicas).
#include "optim/replica_shard.h"

#include <algorithm>
#include <bit>
#include <iterator>

#include "core/error.h"

namespace mpipe::optim {

int shard_index(int replica, int replicas) {
  check(0 <= replica && replica < replicas, "shard_index: replica {} of {}", replica, replicas);
  if (!std::has_single_bit(static_cast<unsigned>(replicas))) return replica;
  const int bits = std::countr_zero(static_cast<unsigned>(replicas));
  int index = 0;
  for (int bit = 0; bit < bits; ++bit) index |= ((replica >> bit) & 1) << (bits - 1 - bit);
  return index;
}

std::vector<int64_t> shard_begins(std::span<const int64_t> cuts, int64_t num_params, int replicas) {
  check(replicas >= 1 && num_params >= 0, "shard_begins: {} parameters over {} replicas",
        num_params, replicas);
  check(std::ranges::is_sorted(cuts) &&
            (cuts.empty() || (cuts.front() >= 0 && cuts.back() <= num_params)),
        "shard_begins: the cuts must ascend within [0, {}]", num_params);
  std::vector<int64_t> begins;
  for (int s = 0; s < replicas; ++s) {
    const int64_t target = s * num_params / replicas;
    const auto after = std::ranges::upper_bound(cuts, target);
    begins.push_back(after == cuts.begin() ? 0 : *std::prev(after));
  }
  begins.push_back(num_params);
  return begins;
}

}  // namespace mpipe::optim
