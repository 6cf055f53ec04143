// The token shard format of karpathy/llm.c: a header of 256 little-endian int32 (magic, version,
// token count, then zeros), followed by the tokens as little-endian uint16 or uint32.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mpipe::data::token_shard {

inline constexpr int32_t kMagicU16 = 20240520;  // tokens are uint16 (vocabularies up to 65536)
inline constexpr int32_t kMagicU32 = 20240801;  // tokens are uint32
inline constexpr int32_t kVersion = 1;
inline constexpr size_t kHeaderInts = 256;
inline constexpr size_t kHeaderBytes = kHeaderInts * sizeof(int32_t);
// Header positions.
inline constexpr size_t kMagicAt = 0;
inline constexpr size_t kVersionAt = 1;
inline constexpr size_t kCountAt = 2;

// Bytes per token for a shard with `magic`; 0 for a magic that is neither.
constexpr size_t token_bytes(int32_t magic) {
  if (magic == kMagicU16) return sizeof(uint16_t);
  if (magic == kMagicU32) return sizeof(uint32_t);
  return 0;
}

// The magic of shards whose token ids are all below `vocab`: uint16 when they fit.
constexpr int32_t magic_for_vocab(int64_t vocab) { return vocab <= 65536 ? kMagicU16 : kMagicU32; }

}  // namespace mpipe::data::token_shard
