// tokenize_pairs (`mpipe tokenize-pairs`): files of translation pairs -> a SentencePiece model
// and pair shards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/shard_manifest.h"
#include "tokenize/tokenizer.h"

namespace mpipe::data {

inline constexpr int64_t kDefaultMaxPairLength = 128;

struct TokenizePairsOptions {
  // Files of pairs, one a line: "SOURCE<TAB>TARGET", the source starting with its target
  // language's tag and a space when it has one ("<2en> En el principio..."). test may be "".
  std::string train;
  std::string val;
  std::string test;
  std::string out_dir;                // created if missing
  std::string model;                  // an existing .model to apply; "" = train one
  std::optional<int64_t> vocab_size;  // training: pieces of the new model
  tokenize::ModelType model_type = tokenize::ModelType::kUnigram;
  std::vector<std::string> text_files;  // training: the text it learns from, files or folders
  std::vector<std::string> tags;        // training: the target-language tags, a piece each
  // A pair whose source or target with its eos has more tokens than this is left out.
  int64_t max_len = kDefaultMaxPairLength;
};

struct TokenizePairsReport {
  std::string model;  // the .model used (out_dir/tokenizer.model when trained)
  int64_t vocab = 0;
  std::vector<PairSplitCount> splits;  // train, val (, test)
};

// Trains a model on the text files (written to out_dir/tokenizer.model: pad 0, unk 1, bos 2,
// eos 3, then the tags; sentences, so each line's first word is marked as a word) or loads
// options.model (which must have pad, bos and eos pieces), encodes each split's pairs (a source's
// leading tag as its piece, the rest as a sentence), leaves out those longer than max_len, and
// writes out_dir/pairs_<split>.bin (data/pair_shard_format.h), then out_dir/shards.json. Every
// file is written atomically. Throws InputError naming the file (and line) or option at fault,
// before writing anything: also when out_dir holds shards already.
TokenizePairsReport tokenize_pairs(const TokenizePairsOptions& options);

// A source's ids, without eos: its leading tag ("<2en> ") as the tag's piece, then the rest as a
// sentence (all of it as a sentence when it does not start with a tag). Throws InputError
// "`where`: the tag '<2xx>' is not a piece of `model` ..." for a tag the model has not.
std::vector<int> encode_source(const tokenize::Tokenizer& tokenizer, std::string_view source,
                               const std::string& model, const std::string& where);

// The shard file of a split: "pairs_train.bin".
std::string pair_shard_name(const std::string& split);

}  // namespace mpipe::data
