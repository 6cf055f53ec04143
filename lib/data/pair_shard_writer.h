// Writing of pair shards (data/pair_shard_format.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mpipe::data {

// One translation pair as token ids, the source's tag first.
struct TokenPair {
  std::vector<int> source;
  std::vector<int> target;
};

// Writes `pairs` (every id in [0, vocab)) as one pair shard at `path`, atomically (no partial
// file under `path`, ever): uint16 tokens when the vocabulary fits, else uint32. At most 2^31 - 1
// pairs and 2^31 - 1 tokens (the header's counts are int32).
void write_pair_shard(const std::string& path, std::span<const TokenPair> pairs, int64_t vocab);

}  // namespace mpipe::data
