// tokenize_corpus (`mpipe tokenize`): text files -> a SentencePiece model and token shards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenize/tokenizer.h"

namespace mpipe::data {

// The fewest tokens per shard (--shard-tokens): smaller shards are mostly their 1 KiB header,
// and many files (1 token per shard wrote a file per token).
inline constexpr int64_t kMinShardTokens = 1024;

struct TokenizeOptions {
  std::vector<std::string> text_files;  // files or folders (read as data.path of `text` reads)
  std::string out_dir;                  // created if missing
  std::string model;                    // an existing .model to apply; "" = train one
  std::optional<int64_t> vocab_size;    // training: pieces of the new model
  tokenize::ModelType model_type = tokenize::ModelType::kBpe;
  double val_fraction = 0.05;          // the last part of the text, from a line start
  int64_t shard_tokens = 100'000'000;  // at most this many tokens per shard, >= kMinShardTokens
};

struct SplitCount {
  int64_t tokens = 0;
  int64_t bytes = 0;
  int64_t shards = 0;
};

struct TokenizeReport {
  std::string model;  // the .model used (out_dir/tokenizer.model when trained)
  int64_t vocab = 0;
  SplitCount train;
  SplitCount val;
};

// Reads the text files in order (their bytes concatenated), trains a model on them (written to
// out_dir/tokenizer.model) or loads options.model, splits off the last val_fraction of the bytes
// (at the next line start) as validation text, encodes both splits line by line and writes them
// as out_dir/{train,val}_NNNNNN.bin, then the manifest out_dir/shards.json (data/shard_manifest.h).
// Every file is written atomically. Throws InputError naming the file or option at fault, and
// before writing anything when out_dir holds shards already (of an earlier tokenize).
TokenizeReport tokenize_corpus(const TokenizeOptions& options);

}  // namespace mpipe::data
