// Which parameters of a buffer each data-parallel replica updates under
// optimizer.shard_across_replicas (ZeRO-1: the optimizer state sharded across replicas).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mpipe::optim {

// Where replica `replica` of `replicas` sits in shard order: with a power of two D its bits
// reversed (the shard a reduce-scatter by recursive halving over comm::tree_levels leaves it:
// level i keeps the half its bit i selects), otherwise `replica` itself.
int shard_index(int replica, int replicas);

// The start of every shard of `num_params` parameters in shard order, then num_params: shard s is
// [begins[s], begins[s + 1]). Shards are cut only at `cuts` (ascending offsets in [0,
// num_params]: the gradient norm's block begins, nn::ParamBuffer::norm_block_begins), so a shard
// holds whole blocks and its partial sums of squares are the unsharded run's: begins[s] is the
// largest cut (or 0) at most s·num_params/D. A shard may be empty. replicas >= 1.
std::vector<int64_t> shard_begins(std::span<const int64_t> cuts, int64_t num_params, int replicas);

}  // namespace mpipe::optim
