// PairShard: one pair shard of `mpipe tokenize-pairs` (data/pair_shard_format.h), checked, and
// read a pair at a time with pread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/token_file.h"

namespace mpipe::data {

// A pair shard's file, checked when opened (magic, version, the counts against the file's size,
// the offsets in order) and kept open: its offsets are held in memory (4 bytes per text), its
// tokens read with pread (data/token_file.h). Errors are InputErrors naming the file:
// "pairs_train.bin: not a pair shard: magic 20240520, expected 20250601 (uint16 tokens) or
// 20250602 (uint32 tokens)".
class PairShard : public TokenFile {
 public:
  explicit PairShard(std::string path);

  int64_t num_pairs() const { return static_cast<int64_t>(offsets_.size() / 2); }
  int64_t source_length(int64_t pair) const { return at(2 * pair + 1) - at(2 * pair); }
  int64_t target_length(int64_t pair) const { return at(2 * pair + 2) - at(2 * pair + 1); }
  int64_t longest_source() const { return longest_source_; }
  int64_t longest_target() const { return longest_target_; }
  // The source then the target of pair `pair` as floats, to `out` (source_length + target_length
  // of them); throws as TokenFile::read_as_floats does.
  void read_pair(int64_t pair, int64_t vocab, float* out) const;

 private:
  int64_t at(int64_t i) const { return offsets_[static_cast<size_t>(i)]; }

  std::vector<uint32_t> offsets_;  // 2 * pairs + 1
  int64_t longest_source_ = 0;
  int64_t longest_target_ = 0;
};

}  // namespace mpipe::data
