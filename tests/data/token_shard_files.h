// Test helpers: llm.c token shards, well-formed or damaged, written byte by byte.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "data/token_shard_format.h"

namespace mpipe::data::testing {

// A shard's bytes: the header (magic, version, count) then `tokens` at the magic's width
// (uint32 for an unknown magic).
inline std::string shard_bytes(const std::vector<uint32_t>& tokens,
                               int32_t magic = token_shard::kMagicU16,
                               int32_t version = token_shard::kVersion, int64_t count = -1) {
  std::vector<int32_t> header(token_shard::kHeaderInts, 0);
  header[token_shard::kMagicAt] = magic;
  header[token_shard::kVersionAt] = version;
  header[token_shard::kCountAt] =
      static_cast<int32_t>(count >= 0 ? count : static_cast<int64_t>(tokens.size()));
  std::string bytes(reinterpret_cast<const char*>(header.data()), token_shard::kHeaderBytes);
  for (uint32_t token : tokens) {
    if (magic == token_shard::kMagicU16) {
      const auto narrow = static_cast<uint16_t>(token);
      bytes.append(reinterpret_cast<const char*>(&narrow), sizeof narrow);
    } else {
      bytes.append(reinterpret_cast<const char*>(&token), sizeof token);
    }
  }
  return bytes;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Tokens first, first + 1, ..., first + count - 1, each modulo `modulo`.
inline std::vector<uint32_t> counting(uint32_t first, uint32_t count, uint32_t modulo = 65536) {
  std::vector<uint32_t> tokens;
  for (uint32_t i = 0; i < count; ++i) tokens.push_back((first + i) % modulo);
  return tokens;
}

}  // namespace mpipe::data::testing
