// Opening and checking the header of one llm.c token shard.
#include "data/token_shard.h"

#include <array>
#include <utility>

#include "core/error.h"
#include "data/token_shard_format.h"

namespace mpipe::data {

namespace format = token_shard;

TokenShard::TokenShard(std::string path) : TokenFile(std::move(path), "token shard") {
  const auto file_bytes = static_cast<size_t>(this->file_bytes());
  check_input(file_bytes >= format::kHeaderBytes,
              "{}: {} bytes, shorter than the {}-byte token shard header", this->path(), file_bytes,
              format::kHeaderBytes);
  std::array<int32_t, format::kHeaderInts> header{};
  read_exactly(header.data(), format::kHeaderBytes, 0);
  const int32_t magic = header[format::kMagicAt];
  const size_t token_bytes = format::token_bytes(magic);
  check_input(token_bytes != 0,
              "{}: not a token shard: magic {}, expected {} (uint16 tokens) or {} (uint32 tokens)",
              this->path(), magic, format::kMagicU16, format::kMagicU32);
  check_input(header[format::kVersionAt] == format::kVersion,
              "{}: token shard version {}, expected {}", this->path(), header[format::kVersionAt],
              format::kVersion);
  const int32_t count = header[format::kCountAt];
  const size_t payload = file_bytes - format::kHeaderBytes;
  check_input(count >= 0 && static_cast<size_t>(count) * token_bytes == payload,
              "{}: token count {} in the header needs {} bytes after it, the file has {}",
              this->path(), count, static_cast<int64_t>(count) * static_cast<int64_t>(token_bytes),
              payload);
  set_tokens(format::kHeaderBytes, token_bytes, count);
}

}  // namespace mpipe::data
