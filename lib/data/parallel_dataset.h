// ParallelDataset (data.dataset: pairs): translation pairs from pair shards, as a source, a
// decoder input and a target per example.
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
#include "data/pair_shard.h"

namespace mpipe::data {

// The pair shards of one split, their pairs numbered one after another.
class PairShards {
 public:
  explicit PairShards(const std::vector<std::string>& files);

  int64_t size() const { return starts_.back(); }
  const std::vector<std::unique_ptr<PairShard>>& shards() const { return shards_; }
  // The shard holding pair `index` and the pair's index in it.
  std::pair<const PairShard*, int64_t> find(int64_t index) const;

 private:
  std::vector<std::unique_ptr<PairShard>> shards_;
  std::vector<int64_t> starts_;  // index of each shard's first pair; back() = total
};

// Example i of a split is pair i, with the ids of data.tokenizer (which must have pad, bos and
// eos pieces), each as floats padded with pad to a fixed length:
//   "source"    [source_len]  the source's tokens (its tag first), eos;
//   "target_in" [target_len]  bos, the target's tokens (the decoder's input, teacher forcing);
//   targets     [target_len]  the target's tokens, eos (target_in shifted by one);
// pad_target() is the pad id, so the loss skips the padding. A shard with a pair longer than
// that (source + eos > source_len, or target + 1 > target_len) is refused when the dataset is
// made, naming the lengths it needs: pairs are never cut (a cut target would teach the model to
// stop mid-sentence); `mpipe tokenize-pairs --max-len` leaves long pairs out instead. Training
// order: ExampleOrder::kKeyed. A shard that changes during the run is a read fault
// (Dataset::read_fault): the reads give zeros from then on.
class ParallelDataset : public Dataset {
 public:
  // Throws InputError naming the shard, tokenizer or key at fault.
  explicit ParallelDataset(const DataConfig& config);

  Shape input_shape() const override { return Shape{source_len_}; }
  Shape target_shape() const override { return Shape{target_len_}; }
  int64_t num_classes() const override { return vocab_; }
  int64_t input_vocab() const override { return vocab_; }
  std::string_view name() const override { return "pairs"; }
  int64_t size(Split split) const override { return pairs(split).size(); }
  // The sources.
  Tensor inputs(Split split, std::span<const int64_t> indices, uint64_t seed,
                int64_t step) const override;
  Tensor targets(Split split, std::span<const int64_t> indices) const override;
  std::vector<DataInput> data_inputs() const override;
  // {source, target_in}.
  std::vector<Tensor> input_tensors(Split split, std::span<const int64_t> indices, uint64_t seed,
                                    int64_t step) const override;
  std::optional<int64_t> pad_target() const override { return pad_; }
  ExampleOrder example_order() const override { return ExampleOrder::kKeyed; }
  // Scans tokens [part·N/parts, (part+1)·N/parts) of the N tokens of the training shards then
  // the validation shards.
  void check_contents(int part, int parts) const override;
  std::string read_fault() const override;

 private:
  // Which of the three tensors of an example to build.
  enum class Part { kSource, kTargetIn, kTarget };

  const PairShards& pairs(Split split) const { return split == Split::kTrain ? train_ : val_; }
  Tensor read(Split split, std::span<const int64_t> indices, Part part) const;

  int64_t source_len_;
  int64_t target_len_;
  int64_t vocab_ = 0;
  std::string vocab_key_;  // "data.tokenizer <path>", for errors
  int pad_ = 0;
  int bos_ = 0;
  int eos_ = 0;
  PairShards train_;
  PairShards val_;
  mutable FirstFault fault_;
};

}  // namespace mpipe::data
