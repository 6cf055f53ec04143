// The pair shard format of `mpipe tokenize-pairs`: translation pairs (source, target) as token
// ids, little-endian:
//   header   256 int32: magic, version, pair count N, token count T, then zeros;
//   offsets  2N + 1 uint32 token positions o: pair i's source is tokens [o[2i], o[2i+1]), its
//            target [o[2i+1], o[2i+2]); o[0] = 0, never decreasing, o[2N] = T;
//   tokens   T uint16 (magic kMagicU16) or uint32 (kMagicU32), the pairs one after another.
// The tokens are the encoded texts alone: the source's target-language tag is its first token,
// and no bos, eos or padding is stored (data/parallel_dataset.h adds them).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mpipe::data::pair_shard {

inline constexpr int32_t kMagicU16 = 20250601;  // tokens are uint16 (vocabularies up to 65536)
inline constexpr int32_t kMagicU32 = 20250602;  // tokens are uint32
inline constexpr int32_t kVersion = 1;
inline constexpr size_t kHeaderInts = 256;
inline constexpr size_t kHeaderBytes = kHeaderInts * sizeof(int32_t);
inline constexpr size_t kOffsetBytes = sizeof(uint32_t);
// Header positions.
inline constexpr size_t kMagicAt = 0;
inline constexpr size_t kVersionAt = 1;
inline constexpr size_t kPairsAt = 2;
inline constexpr size_t kTokensAt = 3;

// Bytes per token for a shard with `magic`; 0 for a magic that is neither.
constexpr size_t token_bytes(int32_t magic) {
  if (magic == kMagicU16) return sizeof(uint16_t);
  if (magic == kMagicU32) return sizeof(uint32_t);
  return 0;
}

// The magic of shards whose token ids are all below `vocab`: uint16 when they fit.
constexpr int32_t magic_for_vocab(int64_t vocab) { return vocab <= 65536 ? kMagicU16 : kMagicU32; }

}  // namespace mpipe::data::pair_shard
