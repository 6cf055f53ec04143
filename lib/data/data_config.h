// Dataset settings (the `data:` section of an experiment).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"

namespace mpipe::data {

enum class DatasetKind { kFashionMnist, kSynthetic, kText, kTokens, kTensors, kPairs };
inline constexpr EnumNames<DatasetKind, 6> kDatasetNames{
    {{"fashion_mnist", DatasetKind::kFashionMnist},
     {"synthetic", DatasetKind::kSynthetic},
     {"text", DatasetKind::kText},
     {"tokens", DatasetKind::kTokens},
     {"tensors", DatasetKind::kTensors},
     {"pairs", DatasetKind::kPairs}}};

// kTokens: one list of a weighted mix (data.train: [{shards: ..., weight: ...}, ...]).
struct WeightedShards {
  std::vector<std::string> shards;  // files or glob patterns, as data.train's
  double weight = 1;                // > 0
};

// What an example asks of the model (data.task): its class, or its clean image back.
enum class DataTask { kClassify, kDenoise };
inline constexpr EnumNames<DataTask, 2> kDataTaskNames{
    {{"classify", DataTask::kClassify}, {"denoise", DataTask::kDenoise}}};

struct DataConfig {
  DatasetKind kind = DatasetKind::kFashionMnist;
  // kFashionMnist: folder with the four gzipped IDX files (Debian: dataset-fashion-mnist).
  // kText: a file or a folder of text files (default: Debian's fortunes).
  // kTensors: a .safetensors file holding `inputs` and `targets` (required).
  std::string path;
  bool flatten = true;    // kFashionMnist: examples as [784] (true) or [1, 28, 28] (false)
  bool normalize = true;  // kFashionMnist: (x/255 - mean) / std
  int64_t augment_crop_padding = 0;  // kFashionMnist images: random crop after zero padding
  bool augment_flip = false;         // kFashionMnist images: random horizontal flip
  // kFashionMnist: kDenoise makes each example (the image plus Gaussian noise of standard
  // deviation noise_std, in the input's units; the clean image), for an mse loss.
  DataTask task = DataTask::kClassify;
  double noise_std = 0.5;
  // kSynthetic: a fixed random teacher network labels Gaussian inputs.
  int64_t num_examples = 4096;
  int64_t features = 64;
  int64_t classes = 10;  // 0 = regression with one target per example
  // kText: windows of seq_len bytes (training: at every byte; validation: side by side); the
  // last val_fraction of the corpus is validation.
  // kTensors: the last val_fraction of the rows is validation.
  int64_t seq_len = 64;
  double val_fraction = 0.05;
  int64_t vocab = 256;  // kSynthetic tokens when > 0 with seq_len: language-model shaped data
  bool tokens = false;  // kSynthetic: token sequences instead of feature vectors
  // kTokens: llm.c token shards, each entry a file or a glob pattern, windows of seq_len + 1
  // tokens. The vocabulary is the tokenizer's when one is named, else `vocab`.
  // kPairs: pair shards of `mpipe tokenize-pairs`, and their tokenizer (required).
  std::vector<std::string> train_shards;  // data.train
  std::vector<std::string> val_shards;    // data.val
  // kTokens: data.train as a weighted mix of lists (docs/design/data.md, "Data mixing"),
  // train_shards then empty; empty when data.train is a file, a glob or a list of them.
  std::vector<WeightedShards> train_mix;
  std::string tokenizer;  // a SentencePiece .model, or "" for none
  // kPairs: the length of a source (its tokens, eos, padding) and of a target (bos or eos and
  // its tokens, padding).
  int64_t source_len = 128;
  int64_t target_len = 128;
};

}  // namespace mpipe::data
