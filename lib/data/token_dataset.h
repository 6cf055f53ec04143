// TokenDataset (data.dataset: tokens): language-model windows over token shards.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/data_config.h"
#include "data/dataset.h"
#include "data/first_fault.h"
#include "data/shard_files.h"
#include "data/token_shard.h"

namespace mpipe::data {

// The shards of one split, seen as non-overlapping windows of seq_len + 1 tokens at stride
// seq_len, none crossing the end of a shard: a shard of T tokens has (T - 1) / seq_len of them.
class ShardWindows {
 public:
  ShardWindows(const std::vector<std::string>& files, int64_t seq_len);

  int64_t size() const { return starts_.back(); }
  int64_t num_tokens() const { return num_tokens_; }
  // The window index of shard `shard`'s first window; first_window(shards().size()) = size().
  int64_t first_window(size_t shard) const { return starts_[shard]; }
  const std::vector<std::unique_ptr<TokenShard>>& shards() const { return shards_; }
  // Tokens [offset, offset + seq_len) of window `index` as floats, to `out`; throws
  // InputError when its shard changed or a token is not below `vocab` (TokenShard).
  void read(int64_t index, int64_t offset, int64_t vocab, float* out) const;

 private:
  int64_t seq_len_;
  std::vector<std::unique_ptr<TokenShard>> shards_;
  std::vector<int64_t> starts_;  // window index of each shard's first window; back() = total
  int64_t num_tokens_ = 0;
};

// Example i of a split: inputs = tokens [0, seq_len) of window i, targets = tokens [1, seq_len]
// (ids as floats). The vocabulary is the tokenizer's (data.tokenizer) or data.vocab; every
// token of every shard is checked against it by check_contents, the ranks of a run each scanning
// an equal share of the tokens. Training order: ExampleOrder::kKeyed, or with data.train a mix
// of two or more lists (data.train_mix), each list a MixPart of its windows. A shard that changes
// during the run is a read fault (Dataset::read_fault): the reads give zeros from then on.
class TokenDataset : public Dataset {
 public:
  // Throws InputError naming the shard (or tokenizer) file and what is wrong with it.
  explicit TokenDataset(const DataConfig& config);

  Shape input_shape() const override { return Shape{seq_len_}; }
  Shape target_shape() const override { return Shape{seq_len_}; }
  int64_t num_classes() const override { return vocab_; }
  int64_t input_vocab() const override { return vocab_; }
  std::string_view name() const override { return "tokens"; }
  int64_t size(Split split) const override { return windows(split).size(); }
  Tensor inputs(Split split, std::span<const int64_t> indices, uint64_t seed,
                int64_t step) const override;
  Tensor targets(Split split, std::span<const int64_t> indices) const override;
  std::optional<int64_t> test_target_bytes(int64_t num_examples) const override;
  ExampleOrder example_order() const override { return ExampleOrder::kKeyed; }
  std::vector<MixPart> train_mix() const override { return train_mix_; }
  // Scans tokens [part·N/parts, (part+1)·N/parts) of the N tokens of the training shards then
  // the validation shards.
  void check_contents(int part, int parts) const override;
  std::string read_fault() const override;

 private:
  // `train_lists`: data.train's files, list by list (one list unless data.train is a mix).
  TokenDataset(const DataConfig& config, const std::vector<std::vector<std::string>>& train_lists);
  const ShardWindows& windows(Split split) const { return split == Split::kTrain ? train_ : val_; }
  Tensor read(Split split, std::span<const int64_t> indices, int64_t offset) const;

  int64_t seq_len_;
  int64_t vocab_;
  std::string vocab_key_;  // where the vocabulary comes from, for errors: "data.vocab", ...
  std::vector<int64_t> piece_bytes_;  // bytes of text per token id; empty without a tokenizer
  ShardWindows train_;
  ShardWindows val_;
  std::vector<MixPart> train_mix_;  // empty unless data.train is a mix of two or more lists
  mutable FirstFault fault_;
};

}  // namespace mpipe::data
