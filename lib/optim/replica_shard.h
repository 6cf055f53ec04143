// Which parameters of a buffer each data-parallel replica updates under
// optimizer.shard_across_replicas (ZeRO-1: the optimizer state sharded across replicas).
#pragma once

#include <cstdint>
#include <vector>

#include "optim/optimizer.h"

namespace mpipe::optim {

// Shards start on multiples of 16 floats (64 bytes, ParamBuffer's tensor alignment), so a
// shard's element-wise loops see the same alignment as the whole buffer's.
inline constexpr int64_t kShardAlign = 16;

// The start of every replica's shard of `num_params` parameters, then num_params: replica r owns
// [begins[r], begins[r + 1]), begins[r] = r·num_params/D rounded down to a multiple of
// kShardAlign, so every shard but the last holds at most num_params/D (a shard may be empty).
// replicas >= 1.
std::vector<int64_t> shard_begins(int64_t num_params, int replicas);

// Replica `replica`'s shard of shard_begins(num_params, replicas).
ParamRange replica_shard(int64_t num_params, int replicas, int replica);

}  // namespace mpipe::optim
