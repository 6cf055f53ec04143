// TokenShard: one llm.c token shard (data/token_shard_format.h), checked and memory-mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mpipe::data {

// A shard's file, checked when opened (header magic and version, token count against the file's
// size) and mapped read-only: its tokens are read from the page cache, never copied in whole.
// Errors are InputErrors naming the file: "train_000.bin: token count 1000 in the header needs
// 2000 bytes after it, the file has 1998".
class TokenShard {
 public:
  explicit TokenShard(std::string path);
  ~TokenShard();
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  const std::string& path() const { return path_; }
  int64_t num_tokens() const { return num_tokens_; }
  size_t token_bytes() const { return token_bytes_; }  // 2 (uint16) or 4 (uint32)

  // out[i] = token first + i as a float, for i in [0, count). The pages read are unmapped from
  // the process again (madvise MADV_DONTNEED), so reading does not grow the resident memory.
  void read_as_floats(int64_t first, int64_t count, float* out) const;
  // Reads tokens [first, first + count) with pread in fixed chunks (not through the map, so the
  // scan adds nothing to the resident memory) and throws an InputError naming the file, the
  // token's position and `vocab_key` at the first token id >= vocab.
  void check_ids_below(int64_t vocab, const std::string& vocab_key, int64_t first,
                       int64_t count) const;

 private:
  std::string path_;
  int fd_ = -1;
  const std::byte* map_ = nullptr;  // the whole file
  size_t map_bytes_ = 0;
  int64_t num_tokens_ = 0;
  size_t token_bytes_ = 0;
};

}  // namespace mpipe::data
