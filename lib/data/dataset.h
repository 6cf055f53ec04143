// Dataset: a labelled dataset with a train and a test split (in memory, or token shards on disk).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "data/data_config.h"

namespace mpipe::data {

enum class Split { kTrain, kTest };

// The name of the one input of data that has one: what a model's first layer reads unless it says
// `input:` (docs/design/graph.md, "Networks that are not a chain").
inline constexpr const char* kMainInputName = "input";

// One input of every example, by the name a model's layers read it as (a translation pair's
// "source" and "target_in"; "input" for data with one input).
struct DataInput {
  std::string name;
  Shape shape;        // one example, e.g. [784], [1, 28, 28] or [seq_len]
  int64_t vocab = 0;  // > 0: token ids in [0, vocab); 0: real values
};

// How the training examples are ordered, epoch after epoch (data/sampler.h).
enum class ExampleOrder {
  kShuffledEpochs,  // a Fisher-Yates permutation vector per epoch (datasets below 2^32 examples)
  kKeyed,           // data::KeyedPermutation, one position at a time: any size, no memory
};

// One list of a weighted mix of training data (data.train as lists with weights): the next `size`
// examples of the train split after the earlier parts', drawn in proportion to `weight`
// (data/mixed_order.h).
struct MixPart {
  int64_t size = 0;
  double weight = 1;
};

// What a dataset provides, per example: the contract a model trained on it must meet
// (train/data_contract.h checks a model against it).
struct DataSchema {
  std::string name;               // the data.dataset value, naming the data in errors
  std::vector<DataInput> inputs;  // Dataset::data_inputs()
  Shape target;         // [] for a class label, [seq_len] for next tokens, [1] for a value
  int64_t classes = 0;  // > 0: the targets are class indices in [0, classes); 0: real values
  // The target id of padded positions, which the loss skips (Dataset::pad_target); nullopt: none.
  std::optional<int64_t> pad_target = std::nullopt;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  // The first of data_inputs(), for the callers that take one input (text generation, throughput).
  virtual Shape input_shape() const = 0;      // one example, e.g. [784] or [1, 28, 28] or [seq_len]
  virtual Shape target_shape() const = 0;     // one example: [] for a class label, [seq_len], ...
  virtual int64_t num_classes() const = 0;    // 0 for regression
  virtual int64_t input_vocab() const = 0;    // 0 for real-valued inputs, else token ids' range
  virtual std::string_view name() const = 0;  // the data.dataset value: "fashion_mnist", ...
  virtual int64_t size(Split split) const = 0;
  // Examples `indices` of `split`, stacked: [indices.size(), ...input_shape()]. Training-time
  // augmentation (if configured, train split only) is keyed by (seed, step, example index).
  virtual Tensor inputs(Split split, std::span<const int64_t> indices, uint64_t seed,
                        int64_t step) const = 0;
  // [indices.size(), ...target_shape()]; class indices are stored as floats.
  virtual Tensor targets(Split split, std::span<const int64_t> indices) const = 0;
  // Every input of an example, in the order input_tensors() gives them. Data with one input has
  // the one named kMainInputName: {input_shape(), input_vocab()}.
  virtual std::vector<DataInput> data_inputs() const;
  // inputs() for each of data_inputs(), in that order.
  virtual std::vector<Tensor> input_tensors(Split split, std::span<const int64_t> indices,
                                            uint64_t seed, int64_t step) const;
  // The target id that marks a padded position (sentences of different lengths), which the loss
  // leaves out of its sum and its count; nullopt when every target position counts.
  virtual std::optional<int64_t> pad_target() const { return std::nullopt; }
  // Byte-level text: the entropy of the validation split's bytes in bits per character, the loss
  // (over ln 2) of the best model that ignores context. A run over such data reports its
  // validation losses in bits per character beside it and ends with a sample of generated text.
  // nullopt for other data.
  virtual std::optional<double> text_baseline_bits() const { return std::nullopt; }
  // Tokenized text with a tokenizer: the bytes of text that the targets of test examples
  // [0, num_examples) stand for, so that an evaluation reports bits per byte beside its loss.
  // nullopt for other data.
  virtual std::optional<int64_t> test_target_bytes(int64_t /*num_examples*/) const {
    return std::nullopt;
  }
  virtual ExampleOrder example_order() const { return ExampleOrder::kShuffledEpochs; }
  // The parts of the train split that a weighted mix draws from, in order, covering it; empty
  // when the split is not a mix (example_order() alone orders it).
  virtual std::vector<MixPart> train_mix() const { return {}; }
  // Checks part `part` of `parts` of what the constructor leaves unread, so that the ranks of a
  // run share the work (each checks its own part; the caller agrees on the outcome), and throws
  // InputError naming the file. Token shards: every token id below the vocabulary. Other data
  // has nothing left to check.
  virtual void check_contents(int part, int parts) const { (void)part, (void)parts; }
  // What went wrong reading examples since the run started, "" while nothing did. Data read
  // from files during the run (token shards, which may change under it) does not throw from
  // inputs(), targets() or test_target_bytes(), mid-step, where this rank's peers would wait
  // for it forever: they give zeros (or nullopt) and keep the first fault here, which the
  // trainer agrees on at the end of the step or evaluation. Other data cannot fail there.
  virtual std::string read_fault() const { return {}; }

  DataSchema schema() const;
};

// What Split::kTest of `kind`'s data is, by the name it goes by: "test" where the held-out examples
// are a test set (fashion_mnist's, synthetic data's last eighth), "val" where they are a
// validation split (text's and tensors' val_fraction, token and pair shards' data.val).
std::string_view held_out_split_name(DatasetKind kind);

// Builds the configured dataset; `seed` fixes synthetic data. Throws InputError naming the
// file for unreadable or malformed data.
std::unique_ptr<Dataset> make_dataset(const DataConfig& config, uint64_t seed);

// Bytes the configured dataset will hold in memory when its size is set by the config
// (synthetic data: num_examples x example size); 0 for datasets read from files. A double:
// absurd settings must be reportable, not overflow.
double configured_dataset_bytes(const DataConfig& config);

// The example indices of training step `step`: positions [step*batch, (step+1)*batch) of an
// endless sequence of epochs, each a permutation of [0, dataset_size) drawn from the seed.
std::vector<int64_t> batch_indices(uint64_t seed, int64_t step, int64_t batch_size,
                                   int64_t dataset_size);

}  // namespace mpipe::data
