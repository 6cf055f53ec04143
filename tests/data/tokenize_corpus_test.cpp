// Tests for tokenize_corpus (`mpipe tokenize`): a model trained or applied, shards that decode
// back to the text, the counts it reports, and one-line errors for bad inputs.
#include "data/tokenize_corpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "checkpoint/file_digest.h"
#include "data/test_files.h"
#include "data/token_shard.h"
#include "support/input_error_of.h"
#include "tokenize/tokenizer.h"

namespace mpipe::data {
namespace {

using mpipe::testing::input_error_of;
using testing::TempDir;
using testing::write_plain;

// 300 lines of made-up words from a fixed syllable list.
std::string sample_text() {
  const std::vector<std::string> syllables{"ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "ze"};
  std::string text;
  uint32_t state = 7;
  auto next = [&state](uint32_t range) {
    state = state * 1664525u + 1013904223u;  // a fixed linear congruential sequence
    return (state >> 16) % range;
  };
  for (int line = 0; line < 300; ++line) {
    for (int w = 0; w < 6; ++w) {
      for (uint32_t s = 0, n = 1 + next(3); s < n; ++s) text += syllables[next(9)];
      text += ' ';
    }
    text += ".\n";
  }
  return text;
}

// Options for `files` into `out_dir`, to train a model of `vocab_size` pieces (nullopt: none).
TokenizeOptions options_for(std::vector<std::string> files, std::string out_dir,
                            std::optional<int64_t> vocab_size) {
  TokenizeOptions options;
  options.text_files = std::move(files);
  options.out_dir = std::move(out_dir);
  options.vocab_size = vocab_size;
  return options;
}

// The ids of a shard.
std::vector<int> shard_ids(const std::string& path) {
  const TokenShard shard(path);
  std::vector<float> tokens(static_cast<size_t>(shard.num_tokens()));
  shard.read_as_floats(0, shard.num_tokens(), int64_t{1} << 24, tokens.data());
  return std::vector<int>(tokens.begin(), tokens.end());
}

TEST(TokenizeCorpus, TrainsAModelAndWritesShardsThatDecodeToTheText) {
  const TempDir dir;
  const std::string text = sample_text();
  write_plain(dir.file("a.txt"), text.substr(0, 4000));
  write_plain(dir.file("b.txt"), text.substr(4000));
  TokenizeOptions options =
      options_for({dir.file("a.txt"), dir.file("b.txt")}, dir.file("out"), 400);
  options.val_fraction = 0.1;
  options.shard_tokens = 1024;
  const TokenizeReport report = tokenize_corpus(options);
  EXPECT_EQ(report.model, dir.file("out/tokenizer.model"));
  EXPECT_EQ(report.vocab, 400);
  const tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(report.model);
  std::vector<int> train;
  for (int64_t s = 0; s < report.train.shards; ++s) {
    const std::vector<int> ids = shard_ids(dir.file(fmt::format("out/train_{:06}.bin", s)));
    EXPECT_LE(ids.size(), 1024u);
    train.insert(train.end(), ids.begin(), ids.end());
  }
  EXPECT_GT(report.train.shards, 1);
  EXPECT_EQ(report.val.shards, 1);
  const std::vector<int> val = shard_ids(dir.file("out/val_000000.bin"));
  EXPECT_EQ(report.train.tokens, static_cast<int64_t>(train.size()));
  EXPECT_EQ(report.val.tokens, static_cast<int64_t>(val.size()));
  // Validation starts at the first line start in the last 10% of the bytes.
  const auto cut = static_cast<size_t>(static_cast<double>(text.size()) * 0.9);
  const size_t val_start = text.find('\n', cut - 1) + 1;
  EXPECT_EQ(tokenizer.decode(train), text.substr(0, val_start));
  EXPECT_EQ(tokenizer.decode(val), text.substr(val_start));
  EXPECT_EQ(report.train.bytes, static_cast<int64_t>(val_start));
  EXPECT_EQ(report.val.bytes, static_cast<int64_t>(text.size() - val_start));
}

TEST(TokenizeCorpus, AppliesAnExistingModel) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  const TokenizeReport trained =
      tokenize_corpus(options_for({dir.file("a.txt")}, dir.file("first"), 350));
  TokenizeOptions apply = options_for({dir.file("a.txt")}, dir.file("second"), std::nullopt);
  apply.model = trained.model;
  const TokenizeReport applied = tokenize_corpus(apply);
  EXPECT_EQ(applied.model, trained.model);
  EXPECT_FALSE(std::filesystem::exists(dir.file("second/tokenizer.model")));
  EXPECT_EQ(shard_ids(dir.file("second/train_000000.bin")),
            shard_ids(dir.file("first/train_000000.bin")));
}

TEST(TokenizeCorpus, WritesAManifestOfItsShardsAndItsTokenizersCrc32) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  TokenizeOptions options = options_for({dir.file("a.txt")}, dir.file("out"), 400);
  options.shard_tokens = 1024;
  const TokenizeReport report = tokenize_corpus(options);
  ASSERT_EQ(report.val.shards, 1);
  std::vector<std::string> shards;
  for (int64_t s = 0; s < report.train.shards; ++s) {
    shards.push_back(fmt::format("train_{:06}.bin", s));
  }
  shards.push_back("val_000000.bin");
  const nlohmann::json manifest = nlohmann::json::parse(std::ifstream(dir.file("out/shards.json")));
  EXPECT_EQ(manifest.at("shards").get<std::vector<std::string>>(), shards);
  EXPECT_EQ(manifest.at("vocab").get<int64_t>(), 400);
  EXPECT_EQ(manifest.at("tokenizer_crc32").get<std::string>(),
            checkpoint::crc32_hex(checkpoint::digest_file(report.model).crc32));
}

TEST(TokenizeCorpus, RefusesAFolderHoldingTheShardsOfAnEarlierTokenize) {
  // Written beside them, the new shards would mix into train_*.bin with the earlier ones.
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  const TokenizeReport first =
      tokenize_corpus(options_for({dir.file("a.txt")}, dir.file("out"), 350));
  const checkpoint::FileDigest model = checkpoint::digest_file(first.model);
  EXPECT_EQ(
      input_error_of(
          [&] { tokenize_corpus(options_for({dir.file("a.txt")}, dir.file("out"), 300)); }),
      fmt::format("{}: holds the shards of an earlier tokenize (train_000000.bin and {} more); "
                  "new shards beside them would mix into train_*.bin: remove them or choose "
                  "another --out",
                  dir.file("out"), first.train.shards + first.val.shards - 1));
  EXPECT_EQ(checkpoint::digest_file(first.model), model);  // nothing was written
}

TEST(TokenizeCorpus, RefusesAMissingTextFile) {
  const TempDir dir;
  EXPECT_EQ(input_error_of([&] {
              tokenize_corpus(options_for({dir.file("none.txt")}, dir.file("out"), 300));
            }),
            dir.file("none.txt") + ": cannot open");
}

TEST(TokenizeCorpus, RefusesAVocabularySizeOutsideWhatTrainingTakes) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  EXPECT_EQ(input_error_of([&] {
              tokenize_corpus(options_for({dir.file("a.txt")}, dir.file("out"), int64_t{1} << 24));
            }),
            "--vocab-size: must be in [2, 2^24), got 16777216");
}

TEST(TokenizeCorpus, RefusesAVocabularySizeOfZeroAsGiven) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  EXPECT_EQ(input_error_of(
                [&] { tokenize_corpus(options_for({dir.file("a.txt")}, dir.file("out"), 0)); }),
            "--vocab-size: must be in [2, 2^24), got 0");
}

TEST(TokenizeCorpus, RefusesNeitherAVocabularySizeNorAModel) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  EXPECT_EQ(input_error_of([&] {
              tokenize_corpus(options_for({dir.file("a.txt")}, dir.file("out"), std::nullopt));
            }),
            "tokenize: give --vocab-size to train a model or --model to apply one");
}

TEST(TokenizeCorpus, RefusesShardsSmallerThanTheirHeader) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  TokenizeOptions options = options_for({dir.file("a.txt")}, dir.file("out"), 300);
  options.shard_tokens = 1023;
  EXPECT_EQ(input_error_of([&] { tokenize_corpus(options); }),
            "--shard-tokens: must be in [1024, 2^31), got 1023");
  EXPECT_FALSE(std::filesystem::exists(dir.file("out")));
}

TEST(TokenizeCorpus, RefusesABinaryFileNamingItsArgument) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  write_plain(dir.file("b.bin"), std::string("\x7f"
                                             "ELF\x02\x01\x01\0\0",
                                             9));
  EXPECT_EQ(
      input_error_of([&] {
        tokenize_corpus(options_for({dir.file("a.txt"), dir.file("b.bin")}, dir.file("out"), 300));
      }),
      dir.file("b.bin") +
          ": a binary file, not text (a NUL byte at offset 7); tokenize TEXT takes text "
          "files");
  EXPECT_FALSE(std::filesystem::exists(dir.file("out")));
}

TEST(TokenizeCorpus, RefusesADeviceNamingItsArgumentNotDataPath) {
  const TempDir dir;
  EXPECT_EQ(
      input_error_of([&] { tokenize_corpus(options_for({"/dev/zero"}, dir.file("out"), 300)); }),
      "/dev/zero: tokenize TEXT: must be a regular file or a folder of them, not a character "
      "device");
}

TEST(TokenizeCorpus, RefusesAnUnreadableModel) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), sample_text());
  write_plain(dir.file("bad.model"), "no model");
  TokenizeOptions options = options_for({dir.file("a.txt")}, dir.file("out"), std::nullopt);
  options.model = dir.file("bad.model");
  EXPECT_EQ(input_error_of([&] { tokenize_corpus(options); }),
            dir.file("bad.model") + ": not a SentencePiece model (its bytes do not parse as one)");
}

TEST(TokenizeCorpus, RefusesTextWithoutALineStartInTheValidationPart) {
  const TempDir dir;
  write_plain(dir.file("a.txt"), "one long line without a newline");
  EXPECT_EQ(input_error_of(
                [&] { tokenize_corpus(options_for({dir.file("a.txt")}, dir.file("out"), 300)); }),
            "tokenize: 31 bytes of text cannot be split into training and validation text at a "
            "line start (--val-fraction 0.05)");
}

}  // namespace
}  // namespace mpipe::data
