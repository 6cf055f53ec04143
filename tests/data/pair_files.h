// Test helpers: a small tokenizer with pad, bos and eos pieces, and pair shards byte by byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/pair_shard_format.h"
#include "tokenize/tokenizer.h"

namespace mpipe::data::testing {

// 300 lines of made-up words from a fixed syllable list: enough for a model of 300 pieces.
inline std::string made_up_sentences() {
  const std::vector<std::string> syllables{"ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "zé",
                                           "pu", "ga", "di", "be", "fo", "hy", "ji", "wu", "xa"};
  std::string text;
  uint32_t state = 7;
  auto next = [&state](uint32_t range) {
    state = state * 1664525u + 1013904223u;  // a fixed linear congruential sequence
    return (state >> 16) % range;
  };
  for (int line = 0; line < 300; ++line) {
    for (int w = 0; w < 6; ++w) {
      for (uint32_t s = 0, n = 1 + next(3); s < n; ++s) text += syllables[next(18)];
      text += w == 5 ? ".\n" : " ";
    }
  }
  return text;
}

// A serialized model of 300 pieces: pad 0, unk 1, bos 2, eos 3, "<2en>" 4, "<2es>" 5.
inline std::string pair_tokenizer_bytes() {
  return tokenize::train_model(made_up_sentences(), {.vocab_size = 300,
                                                     .type = tokenize::ModelType::kUnigram,
                                                     .sentences = true,
                                                     .pad_piece = true,
                                                     .user_symbols = {"<2en>", "<2es>"}});
}

// A pair shard's bytes: header (magic, version, pairs, tokens) with `offsets` and `tokens` as
// given (uint16 tokens unless the magic says uint32).
inline std::string pair_shard_bytes(const std::vector<uint32_t>& offsets,
                                    const std::vector<uint32_t>& tokens,
                                    int32_t magic = pair_shard::kMagicU16,
                                    int32_t version = pair_shard::kVersion) {
  std::vector<int32_t> header(pair_shard::kHeaderInts, 0);
  header[pair_shard::kMagicAt] = magic;
  header[pair_shard::kVersionAt] = version;
  header[pair_shard::kPairsAt] = static_cast<int32_t>((offsets.size() - 1) / 2);
  header[pair_shard::kTokensAt] = static_cast<int32_t>(tokens.size());
  std::string bytes(reinterpret_cast<const char*>(header.data()), pair_shard::kHeaderBytes);
  bytes.append(reinterpret_cast<const char*>(offsets.data()), offsets.size() * sizeof(uint32_t));
  for (uint32_t token : tokens) {
    if (magic == pair_shard::kMagicU32) {
      bytes.append(reinterpret_cast<const char*>(&token), sizeof token);
    } else {
      const auto narrow = static_cast<uint16_t>(token);
      bytes.append(reinterpret_cast<const char*>(&narrow), sizeof narrow);
    }
  }
  return bytes;
}

}  // namespace mpipe::data::testing
