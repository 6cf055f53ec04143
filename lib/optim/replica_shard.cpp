// Replica shards: contiguous, aligned, in replica order.
#include "optim/replica_shard.h"

#include "core/error.h"

namespace mpipe::optim {

std::vector<int64_t> shard_begins(int64_t num_params, int replicas) {
  check(replicas >= 1 && num_params >= 0, "shard_begins: {} parameters over {} replicas",
        num_params, replicas);
  std::vector<int64_t> begins;
  for (int r = 0; r < replicas; ++r) {
    begins.push_back(r * num_params / replicas / kShardAlign * kShardAlign);
  }
  begins.push_back(num_params);
  return begins;
}

ParamRange replica_shard(int64_t num_params, int replicas, int replica) {
  const std::vector<int64_t> begins = shard_begins(num_params, replicas);
  check(0 <= replica && replica < replicas, "replica_shard: replica {} of {}", replica, replicas);
  return {begins[static_cast<size_t>(replica)], begins[static_cast<size_t>(replica) + 1]};
}

}  // namespace mpipe::optim
