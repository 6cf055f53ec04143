// A chunk's checkpoint shard written while its optimizer state is sharded across the replicas:
// each sharded tensor gathered whole onto replica 0 just before it is written.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "comm/communicator.h"
#include "train/stage_tensors.h"

namespace mpipe::train {

// Replica 0 writes `tensors` (held_stage_state's: the same names and shapes on every replica) as
// stage `stage`'s shard of step `step` with `store` and returns its record; each sharded tensor
// is gathered whole from the replicas' parts, in shard order, into `scratch` just before it is
// written (at least the largest sharded tensor: the chunk's gradient buffer, free between steps),
// so a save holds nothing beside the live state. The other replicas send their parts and return
// nullopt. Collective over `replicas` (the data-parallel group in shard order,
// Trainer::shard_order: rank s holds shard s, and replica 0 is rank 0) when any tensor is
// sharded. A write that fails
// on replica 0 still takes every part before it throws, so no replica is left waiting.
std::optional<checkpoint::ShardRecord> write_gathered_shard(
    checkpoint::CheckpointStore& store, int64_t step, int stage,
    const std::vector<HeldTensor>& tensors, const std::map<std::string, std::string>& metadata,
    std::span<float> scratch, const comm::Communicator& replicas);

}  // namespace mpipe::train
