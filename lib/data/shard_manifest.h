// The shard manifest: what `mpipe tokenize` wrote into a folder, checked by a run over it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpipe::data {

inline constexpr const char* kShardManifestName = "shards.json";

// What one split of pair shards holds (`mpipe tokenize-pairs`).
struct PairSplitCount {
  std::string split;    // "train", "val", "test"
  int64_t pairs = 0;    // in its shard
  int64_t tokens = 0;   // of its pairs' sources and targets
  int64_t dropped = 0;  // pairs of the input longer than max_len, left out
};

// <folder>/shards.json, written by `mpipe tokenize` or `mpipe tokenize-pairs` after its shards:
// the crc32 of the tokenizer they were made with and the names of the shards it wrote there;
// for pair shards also --max-len and each split's counts.
struct ShardManifest {
  std::string tokenizer_crc32;  // 8 hex digits
  int64_t vocab = 0;
  std::vector<std::string> shards;  // file names in the folder: train, then validation (, test)
  int64_t max_len = 0;              // pair shards: the longest source or target kept + 1
  std::vector<PairSplitCount> pair_splits = {};  // pair shards; empty for token shards
};

// Writes `manifest` as <folder>/shards.json, atomically.
void write_shard_manifest(const std::string& folder, const ShardManifest& manifest);

// For each folder of `files` (shards) that holds a shards.json: throws InputError naming the
// shard when the manifest does not list it (a shard of another tokenize beside them, which
// train_*.bin would mix in), or naming `tokenizer_key` when `tokenizer` (a .model file; "" for
// none) is not the one the manifest records, or naming a manifest whose tokenizer is not the
// first manifest's (a mix of lists made with other tokenizers). A malformed manifest is an
// InputError naming it.
void check_shard_manifests(const std::vector<std::string>& files, const std::string& tokenizer,
                           const std::string& tokenizer_key);

}  // namespace mpipe::data
