// TokenFile: a shard file kept open and read with pread, its token ids checked as they are read.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace mpipe::data {

// The base of a shard file (data/token_shard.h, data/pair_shard.h), opened once: its constructor
// reads the header with read_exactly and says where the tokens are with set_tokens; they are
// read with read_as_floats and scanned with check_ids_below. Never copied in whole and never mapped
// (a file truncated under a map kills the process with SIGBUS on the next read). Errors are
// InputErrors naming the file.
class TokenFile {
 public:
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

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
  // Throws InputError if the file's size or modification time is not what it was when opened.
  void check_unchanged() const;

 protected:
  // Opens `path`, which must be a regular file (else "<path>: a <kind> must be a regular
  // file"); `kind` ("token shard", "pair shard") names such files in errors.
  TokenFile(std::string path, std::string kind);
  int64_t file_bytes() const { return file_bytes_; }  // when opened
  // Reads exactly `bytes` at `offset`, or throws.
  void read_exactly(void* out, size_t bytes, off_t offset) const;
  // Where the tokens are, once the header says: `count` tokens of `token_bytes` (2 or 4) from
  // byte `tokens_at`.
  void set_tokens(off_t tokens_at, size_t token_bytes, int64_t count);

 private:
  std::string path_;
  std::string kind_;
  int fd_ = -1;
  off_t file_bytes_ = 0;    // when opened
  timespec modified_at_{};  // when opened
  off_t tokens_at_ = 0;
  size_t token_bytes_ = 0;
  int64_t num_tokens_ = 0;
};

// Scans tokens [part·N/parts, (part+1)·N/parts) of the N tokens of `files` laid end to end with
// TokenFile::check_ids_below, so that the ranks of a run share a dataset's scan.
void check_ids_in_part(const std::vector<const TokenFile*>& files, int64_t vocab,
                       const std::string& vocab_key, int part, int parts);

// Token i of little-endian tokens of `width` bytes (2 or 4) at `base`.
uint32_t token_at(const std::byte* base, size_t width, int64_t i);

}  // namespace mpipe::data
