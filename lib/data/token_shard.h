// TokenShard: one llm.c token shard (data/token_shard_format.h), checked, and read with pread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>

namespace mpipe::data {

// A shard's file, checked when opened (header magic and version, token count against the file's
// size) and kept open: its tokens are read with pread from the page cache, never copied in whole
// and never mapped (a file truncated under a map kills the process with SIGBUS on the next read).
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

  // out[i] = token first + i as a float, for i in [0, count). Throws InputError naming the file
  // if it changed since it was opened or a token is not below `vocab` (every token was, at
  // start-up). A change is a size or modification time other than at opening, looked at after
  // the read: a write sets the time before it copies its bytes, so bytes read before the look
  // are from before any change it does not see. (A write in the same tick of the file system's
  // clock as the last one before opening keeps the time; the vocabulary check still holds.)
  void read_as_floats(int64_t first, int64_t count, int64_t vocab, float* out) const;
  // Reads tokens [first, first + count) with pread in fixed chunks and throws an InputError
  // naming the file, the token's position and `vocab_key` at the first token id >= vocab.
  void check_ids_below(int64_t vocab, const std::string& vocab_key, int64_t first,
                       int64_t count) const;

 private:
  // Throws InputError if the file's size or modification time is not what it was when opened.
  void check_unchanged() const;

  std::string path_;
  int fd_ = -1;
  off_t file_bytes_ = 0;    // when opened
  timespec modified_at_{};  // when opened
  int64_t num_tokens_ = 0;
  size_t token_bytes_ = 0;
};

}  // namespace mpipe::data
