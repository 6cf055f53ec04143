// The `data:` section: which dataset, where it is, and its shape and augmentation settings.
#include <optional>

#include "config/bounded.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {
namespace {

// Token shards: one file or glob pattern, or a non-empty list of them.
std::vector<std::string> read_shard_patterns(const Field& field) {
  if (field.node().IsScalar()) return {field.as_string()};
  std::vector<std::string> patterns;
  for (const Field& element : field.elements("a shard file or glob, or a list of them")) {
    patterns.push_back(element.as_string());
  }
  if (patterns.empty()) field.fail("expected at least one shard file or glob, got []");
  return patterns;
}

// data.train as a weighted mix: a non-empty list of {shards: <as data.train>, weight: <> 0>}.
std::vector<data::WeightedShards> read_shard_mix(const Field& field) {
  std::vector<data::WeightedShards> mix;
  for (const Field& element : field.elements("a list of {shards: ..., weight: ...}")) {
    if (!element.node().IsMap()) {
      element.fail("expected {shards: ..., weight: ...} like the other lists of the mix, got " +
                   element.describe());
    }
    const MapReader entry(element, {"shards", "weight"});
    mix.push_back({.shards = read_shard_patterns(entry.required("shards")),
                   .weight = read_double(entry.required("weight"), above(0))});
  }
  return mix;
}

// data.train: a file or glob, a list of them, or a list of weighted lists (a map first).
void read_train_shards(const Field& field, data::DataConfig& config) {
  const bool mix = field.node().IsSequence() && field.node().size() > 0 && field.node()[0].IsMap();
  if (mix) {
    config.train_mix = read_shard_mix(field);
  } else {
    config.train_shards = read_shard_patterns(field);
  }
}

}  // namespace

data::DataConfig parse_data(const Field& section) {
  const MapReader map(
      section, {"dataset",      "path",    "flatten",      "normalize",    "augment_crop_padding",
                "augment_flip", "task",    "noise_std",    "num_examples", "features",
                "classes",      "seq_len", "val_fraction", "vocab",        "tokens",
                "train",        "val",     "tokenizer",    "source_len",   "target_len"});
  data::DataConfig config;
  const std::optional<Field> dataset = map.get("dataset");
  if (dataset) config.kind = dataset->as_choice(data::kDatasetNames);
  if (auto f = map.get("path")) config.path = f->as_string();
  if (config.kind == data::DatasetKind::kTensors && config.path.empty()) {
    dataset->fail("tensors needs data.path: a .safetensors file holding 'inputs' and 'targets'");
  }
  if (auto f = map.get("flatten")) config.flatten = f->as_bool();
  if (auto f = map.get("normalize")) config.normalize = f->as_bool();
  if (auto f = map.get("augment_crop_padding")) {
    config.augment_crop_padding = read_int(*f, at_least(0));
  }
  if (auto f = map.get("augment_flip")) config.augment_flip = f->as_bool();
  if (auto f = map.get("task")) {
    config.task = f->as_choice(data::kDataTaskNames);
    if (config.kind != data::DatasetKind::kFashionMnist &&
        config.task != data::DataTask::kClassify) {
      f->fail("denoise is only for data.dataset: fashion_mnist");
    }
  }
  if (auto f = map.get("noise_std")) {
    if (config.task != data::DataTask::kDenoise) f->fail("only with data.task: denoise");
    config.noise_std = read_double(*f, above(0));
  }
  if (config.task == data::DataTask::kDenoise &&
      (config.augment_crop_padding > 0 || config.augment_flip)) {
    map.get(config.augment_flip ? "augment_flip" : "augment_crop_padding")
        ->fail("not with data.task: denoise (the targets are the images as stored)");
  }
  if (auto f = map.get("num_examples")) config.num_examples = read_int(*f, at_least(1));
  if (auto f = map.get("features")) config.features = read_int(*f, at_least(1));
  if (auto f = map.get("classes")) config.classes = read_int(*f, at_least(0));
  if (auto f = map.get("seq_len")) config.seq_len = read_int(*f, at_least(1));
  if (auto f = map.get("val_fraction")) config.val_fraction = read_double(*f, open_interval(0, 1));
  if (auto f = map.get("vocab")) config.vocab = read_int(*f, at_least(2));
  if (auto f = map.get("tokens")) config.tokens = f->as_bool();
  if (auto f = map.get("train")) read_train_shards(*f, config);
  if (auto f = map.get("val")) config.val_shards = read_shard_patterns(*f);
  if (auto f = map.get("tokenizer")) config.tokenizer = f->as_string();
  // A source holds at least a token and its eos; a target at least bos or eos and a token.
  if (auto f = map.get("source_len")) config.source_len = read_int(*f, at_least(2));
  if (auto f = map.get("target_len")) config.target_len = read_int(*f, at_least(2));
  if (config.kind == data::DatasetKind::kPairs) {
    map.required("train");
    map.required("val");
    map.required("tokenizer");
    if (auto f = map.get("vocab")) f->fail("not with pairs, whose vocabulary is data.tokenizer's");
    if (!config.train_mix.empty()) map.get("train")->fail("a weighted mix is only for tokens");
    if (auto f = map.get("seq_len")) {
      f->fail("not with pairs, which have data.source_len and data.target_len");
    }
  } else {
    for (const char* key : {"source_len", "target_len"}) {
      if (auto f = map.get(key)) f->fail("only for data.dataset: pairs");
    }
  }
  if (config.kind == data::DatasetKind::kTokens) {
    map.required("train");
    map.required("val");
    if (auto f = map.get("vocab"); f && !config.tokenizer.empty()) {
      f->fail("not with data.tokenizer, whose vocabulary the data has");
    }
  }
  return config;
}

}  // namespace mpipe::config
