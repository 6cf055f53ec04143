// Windows over token shards and the token dataset built on them.
#include "data/token_dataset.h"

#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "data/shard_manifest.h"
#include "tokenize/tokenizer.h"

namespace mpipe::data {
namespace {

// Token ids travel as floats, which hold every integer below 2^24 exactly.
constexpr int64_t kMaxVocab = int64_t{1} << 24;

// data.train's files, list by list: one list unless data.train is a mix.
std::vector<std::vector<std::string>> train_lists(const DataConfig& config) {
  if (config.train_mix.empty()) return {shard_files(config.train_shards, "data.train")};
  std::vector<std::vector<std::string>> lists;
  for (size_t list = 0; list < config.train_mix.size(); ++list) {
    lists.push_back(
        shard_files(config.train_mix[list].shards, fmt::format("data.train[{}].shards", list)));
  }
  return lists;
}

std::vector<std::string> joined(const std::vector<std::vector<std::string>>& lists) {
  std::vector<std::string> files;
  for (const auto& list : lists) files.insert(files.end(), list.begin(), list.end());
  return files;
}

}  // namespace

ShardWindows::ShardWindows(const std::vector<std::string>& files, int64_t seq_len)
    : seq_len_(seq_len), starts_{0} {
  check(seq_len >= 1, "ShardWindows: seq_len must be >= 1, got {}", seq_len);
  for (const std::string& file : files) {
    auto shard = std::make_unique<TokenShard>(file);
    const int64_t tokens = shard->num_tokens();
    num_tokens_ += tokens;
    starts_.push_back(starts_.back() + (tokens > seq_len ? (tokens - 1) / seq_len : 0));
    shards_.push_back(std::move(shard));
  }
}

void ShardWindows::read(int64_t index, int64_t offset, int64_t vocab, float* out) const {
  check(index >= 0 && index < size(), "token window {} out of range [0, {})", index, size());
  // The last shard whose first window is at or before `index`.
  const auto shard = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), index) -
                                         starts_.begin() - 1);
  const int64_t first = (index - starts_[shard]) * seq_len_ + offset;
  shards_[shard]->read_as_floats(first, seq_len_, vocab, out);
}

TokenDataset::TokenDataset(const DataConfig& config) : TokenDataset(config, train_lists(config)) {}

TokenDataset::TokenDataset(const DataConfig& config,
                           const std::vector<std::vector<std::string>>& train_lists)
    : seq_len_(config.seq_len),
      vocab_(config.vocab),
      train_(joined(train_lists), config.seq_len),
      val_(shard_files(config.val_shards, "data.val"), config.seq_len) {
  check_input(seq_len_ >= 1, "data.seq_len: must be >= 1, got {}", seq_len_);
  vocab_key_ = "data.vocab";
  if (!config.tokenizer.empty()) {
    const tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(config.tokenizer);
    vocab_ = tokenizer.vocab_size();
    piece_bytes_ = tokenizer.piece_bytes();
    vocab_key_ = "data.tokenizer " + config.tokenizer;
  }
  check_input(vocab_ >= 2 && vocab_ < kMaxVocab,
              "{}: a vocabulary of {} token ids; token ids are stored as floats, so it must be "
              "in [2, 2^24)",
              vocab_key_, vocab_);
  std::vector<std::string> files;
  for (const auto* split : {&train_, &val_}) {
    for (const auto& shard : split->shards()) files.push_back(shard->path());
  }
  check_shard_manifests(files, config.tokenizer, "data.tokenizer");
  for (const auto* split : {&train_, &val_}) {
    const char* key = split == &train_ ? "data.train" : "data.val";
    check_input(split->size() > 0,
                "{}: {} tokens in {} shard(s), none with a window of seq_len + 1 = {} tokens", key,
                split->num_tokens(), split->shards().size(), seq_len_ + 1);
  }
  if (train_lists.size() < 2) return;
  size_t first = 0;  // the list's first shard
  for (size_t list = 0; list < train_lists.size(); ++list) {
    const size_t end = first + train_lists[list].size();
    int64_t tokens = 0;
    for (size_t shard = first; shard < end; ++shard) tokens += train_.shards()[shard]->num_tokens();
    const int64_t size = train_.first_window(end) - train_.first_window(first);
    check_input(size > 0,
                "data.train[{}]: {} tokens in {} shard(s), none with a window of seq_len + 1 = {} "
                "tokens",
                list, tokens, end - first, seq_len_ + 1);
    train_mix_.push_back({.size = size, .weight = config.train_mix[list].weight});
    first = end;
  }
}

void TokenDataset::check_contents(int part, int parts) const {
  std::vector<const TokenFile*> files;  // train first
  for (const auto* split : {&train_, &val_}) {
    for (const auto& shard : split->shards()) files.push_back(shard.get());
  }
  check_ids_in_part(files, vocab_, vocab_key_, part, parts);
}

Tensor TokenDataset::read(Split split, std::span<const int64_t> indices, int64_t offset) const {
  const auto count = static_cast<int64_t>(indices.size());
  Tensor out(Shape{count, seq_len_});  // [n, seq_len]
  try {
    for (int64_t row = 0; row < count; ++row) {
      windows(split).read(indices[static_cast<size_t>(row)], offset, vocab_,
                          out.data() + row * seq_len_);
    }
  } catch (const InputError& error) {
    // Mid-step, where a throw would leave this rank's peers waiting: zeros (a valid token id)
    // instead, and the fault for the trainer to agree on at the step's end.
    fault_.record(error);
    out.fill(0.0f);
  }
  return out;
}

std::string TokenDataset::read_fault() const { return fault_.message(); }

Tensor TokenDataset::inputs(Split split, std::span<const int64_t> indices, uint64_t /*seed*/,
                            int64_t /*step*/) const {
  return read(split, indices, 0);
}

Tensor TokenDataset::targets(Split split, std::span<const int64_t> indices) const {
  return read(split, indices, 1);
}

std::optional<int64_t> TokenDataset::test_target_bytes(int64_t num_examples) const {
  if (piece_bytes_.empty()) return std::nullopt;
  check(num_examples >= 0 && num_examples <= val_.size(), "test_target_bytes: {} of {} examples",
        num_examples, val_.size());
  std::vector<float> tokens(static_cast<size_t>(seq_len_));
  int64_t bytes = 0;
  try {
    for (int64_t i = 0; i < num_examples; ++i) {
      val_.read(i, 1, vocab_, tokens.data());
      for (float token : tokens) bytes += piece_bytes_[static_cast<size_t>(token)];
    }
  } catch (const InputError& error) {
    fault_.record(error);  // no bits per byte then
    return std::nullopt;
  }
  return bytes;
}

}  // namespace mpipe::data
