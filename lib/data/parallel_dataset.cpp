// Pair shards of a split, and the translation dataset built on them.
#include "data/parallel_dataset.h"

#include <algorithm>

#include "data/shard_files.h"
#include "data/shard_manifest.h"
#include "tokenize/tokenizer.h"

namespace mpipe::data {
namespace {

// Token ids travel as floats, which hold every integer below 2^24 exactly.
constexpr int64_t kMaxVocab = int64_t{1} << 24;

}  // namespace

PairShards::PairShards(const std::vector<std::string>& files) : starts_{0} {
  for (const std::string& file : files) {
    shards_.push_back(std::make_unique<PairShard>(file));
    starts_.push_back(starts_.back() + shards_.back()->num_pairs());
  }
}

std::pair<const PairShard*, int64_t> PairShards::find(int64_t index) const {
  check(index >= 0 && index < size(), "pair {} out of range [0, {})", index, size());
  // The last shard whose first pair is at or before `index`.
  const auto shard = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), index) -
                                         starts_.begin() - 1);
  return {shards_[shard].get(), index - starts_[shard]};
}

ParallelDataset::ParallelDataset(const DataConfig& config)
    : source_len_(config.source_len),
      target_len_(config.target_len),
      train_(shard_files(config.train_shards, "data.train")),
      val_(shard_files(config.val_shards, "data.val")) {
  check_input(!config.tokenizer.empty(),
              "data.tokenizer: pairs need the tokenizer their shards were made with");
  const tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(config.tokenizer);
  vocab_ = tokenizer.vocab_size();
  vocab_key_ = "data.tokenizer " + config.tokenizer;
  pad_ = tokenizer.pad_id();
  bos_ = tokenizer.bos_id();
  eos_ = tokenizer.eos_id();
  check_input(pad_ >= 0 && bos_ >= 0 && eos_ >= 0,
              "{}: pairs need pad, bos and eos pieces, and it has no {} piece (mpipe "
              "tokenize-pairs trains such a tokenizer)",
              vocab_key_,
              pad_ < 0   ? "pad"
              : bos_ < 0 ? "bos"
                         : "eos");
  check_input(vocab_ < kMaxVocab,
              "{}: a vocabulary of {} token ids; token ids are stored as floats, so it must be "
              "below 2^24",
              vocab_key_, vocab_);
  std::vector<std::string> files;
  for (const auto* split : {&train_, &val_}) {
    for (const auto& shard : split->shards()) files.push_back(shard->path());
  }
  check_shard_manifests(files, config.tokenizer, "data.tokenizer");
  for (const auto* split : {&train_, &val_}) {
    check_input(split->size() > 0, "{}: no pairs in {} shard(s)",
                split == &train_ ? "data.train" : "data.val", split->shards().size());
    for (const auto& shard : split->shards()) {
      // The source with its eos; the target with its bos (target_in) or eos (targets).
      const int64_t source_needed = shard->longest_source() + 1;
      const int64_t target_needed = shard->longest_target() + 1;
      check_input(source_needed <= source_len_ && target_needed <= target_len_,
                  "{}: its longest pairs need data.source_len >= {} and data.target_len >= {} "
                  "(with eos, and bos), got {} and {}; or leave them out with mpipe "
                  "tokenize-pairs --max-len",
                  shard->path(), source_needed, target_needed, source_len_, target_len_);
    }
  }
}

std::vector<DataInput> ParallelDataset::data_inputs() const {
  return {{.name = "source", .shape = Shape{source_len_}, .vocab = vocab_},
          {.name = "target_in", .shape = Shape{target_len_}, .vocab = vocab_}};
}

void ParallelDataset::check_contents(int part, int parts) const {
  std::vector<const TokenFile*> files;  // train first
  for (const auto* split : {&train_, &val_}) {
    for (const auto& shard : split->shards()) files.push_back(shard.get());
  }
  check_ids_in_part(files, vocab_, vocab_key_, part, parts);
}

Tensor ParallelDataset::read(Split split, std::span<const int64_t> indices, Part part) const {
  const auto count = static_cast<int64_t>(indices.size());
  const int64_t width = part == Part::kSource ? source_len_ : target_len_;
  Tensor out(Shape{count, width});  // [n, width]
  out.fill(static_cast<float>(pad_));
  std::vector<float> tokens(static_cast<size_t>(source_len_ + target_len_));
  try {
    for (int64_t row = 0; row < count; ++row) {
      const auto [shard, pair] = pairs(split).find(indices[static_cast<size_t>(row)]);
      shard->read_pair(pair, vocab_, tokens.data());
      const int64_t source = shard->source_length(pair);
      const int64_t target = shard->target_length(pair);
      float* dst = out.data() + row * width;
      switch (part) {
        case Part::kSource:  // tokens, eos
          std::copy_n(tokens.begin(), source, dst);
          dst[source] = static_cast<float>(eos_);
          break;
        case Part::kTargetIn:  // bos, tokens
          dst[0] = static_cast<float>(bos_);
          std::copy_n(tokens.begin() + source, target, dst + 1);
          break;
        case Part::kTarget:  // tokens, eos
          std::copy_n(tokens.begin() + source, target, dst);
          dst[target] = static_cast<float>(eos_);
          break;
      }
    }
  } catch (const InputError& error) {
    // Mid-step, where a throw would leave this rank's peers waiting: zeros instead, and the
    // fault for the trainer to agree on at the step's end.
    fault_.record(error);
    out.fill(0.0f);
  }
  return out;
}

Tensor ParallelDataset::inputs(Split split, std::span<const int64_t> indices, uint64_t /*seed*/,
                               int64_t /*step*/) const {
  return read(split, indices, Part::kSource);
}

std::vector<Tensor> ParallelDataset::input_tensors(Split split, std::span<const int64_t> indices,
                                                   uint64_t /*seed*/, int64_t /*step*/) const {
  std::vector<Tensor> tensors;
  tensors.push_back(read(split, indices, Part::kSource));
  tensors.push_back(read(split, indices, Part::kTargetIn));
  return tensors;
}

Tensor ParallelDataset::targets(Split split, std::span<const int64_t> indices) const {
  return read(split, indices, Part::kTarget);
}

std::string ParallelDataset::read_fault() const { return fault_.message(); }

}  // namespace mpipe::data
