// Writing of llm.c token shards (data/token_shard_format.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace mpipe::data {

// Writes `ids` (each in [0, vocab)) as one shard at `path`, atomically (no partial file under
// `path`, ever): uint16 tokens when the vocabulary fits, else uint32. At most 2^31 - 1 tokens
// (the header's count is an int32).
void write_token_shard(const std::string& path, std::span<const int> ids, int64_t vocab);

}  // namespace mpipe::data
