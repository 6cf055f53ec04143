// Tests for Tokenizer and train_model: models trained on a small text encode and decode it
// exactly, piece byte counts add up to the text's bytes, and bad inputs get one-line errors.
#include "tokenize/tokenizer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "support/input_error_of.h"
#include "support/temp_dir.h"

namespace mpipe::tokenize {
namespace {

using mpipe::testing::input_error_of;
using mpipe::testing::TempDir;

// 600 lines of made-up words (two or three syllables of a fixed list, some non-ASCII), with
// newlines, blank lines and double spaces: varied enough for a unigram model of 600 pieces.
std::string sample_text() {
  const std::vector<std::string> syllables{"ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "zé",
                                           "pu", "ga", "dï", "be", "fo", "hy", "ji", "wu", "xa"};
  std::string text;
  uint32_t state = 12345;
  auto next = [&state](uint32_t range) {
    state = state * 1664525u + 1013904223u;  // a fixed linear congruential sequence
    return (state >> 16) % range;
  };
  for (size_t line = 0; line < 600; ++line) {
    for (size_t w = 0; w < 8; ++w) {
      for (uint32_t s = 0, n = 2 + next(2); s < n; ++s) text += syllables[next(18)];
      text += next(13) == 0 ? "  " : " ";
    }
    text += line % 5 == 0 ? ".\n\n" : ".\n";
  }
  return text;
}

void write_text(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.file(name), std::ios::binary) << text;
}

class TrainedTokenizer : public ::testing::TestWithParam<ModelType> {};

TEST_P(TrainedTokenizer, EncodesAndDecodesTheTextExactly) {
  const std::string text = sample_text();
  const Tokenizer tokenizer =
      Tokenizer::from_bytes(train_model(text, {.vocab_size = 600, .type = GetParam()}), "m");
  EXPECT_EQ(tokenizer.vocab_size(), 600);
  const std::vector<int> ids = tokenizer.encode(text);
  EXPECT_LT(ids.size(), text.size() / 2);  // pieces longer than 2 bytes on average
  EXPECT_EQ(tokenizer.decode(ids), text);
  // Text it never saw, with a byte no line of it has: byte fallback.
  const std::string unseen = "zebra\tquartz ~ 日本\n";
  EXPECT_EQ(tokenizer.decode(tokenizer.encode(unseen)), unseen);
}

TEST_P(TrainedTokenizer, PieceBytesOfAnEncodingAddUpToTheTextsBytes) {
  const std::string text = sample_text();
  const Tokenizer tokenizer =
      Tokenizer::from_bytes(train_model(text, {.vocab_size = 600, .type = GetParam()}), "m");
  const std::vector<int64_t> bytes = tokenizer.piece_bytes();
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), tokenizer.vocab_size());
  for (const std::string& piece : {text, std::string("zebra\tquartz ~ 日本\n")}) {
    int64_t total = 0;
    for (int id : tokenizer.encode(piece)) total += bytes[static_cast<size_t>(id)];
    EXPECT_EQ(total, static_cast<int64_t>(piece.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(BpeAndUnigram, TrainedTokenizer,
                         ::testing::Values(ModelType::kBpe, ModelType::kUnigram));

TEST(Tokenizer, LoadsAModelFileAsTrained) {
  const TempDir dir;
  const std::string model = train_model(sample_text(), {.vocab_size = 300});
  std::ofstream(dir.file("m.model"), std::ios::binary) << model;
  const Tokenizer loaded = Tokenizer::load(dir.file("m.model"));
  const Tokenizer direct = Tokenizer::from_bytes(model, "m");
  EXPECT_EQ(loaded.vocab_size(), 300);
  EXPECT_EQ(loaded.encode("the lazy river\n"), direct.encode("the lazy river\n"));
}

TEST(Tokenizer, RefusesAMissingModel) {
  const TempDir dir;
  EXPECT_EQ(input_error_of([&] { Tokenizer::load(dir.file("none.model")); }),
            dir.file("none.model") + ": cannot open: No such file or directory");
}

TEST(Tokenizer, RefusesAFileThatIsNotAModel) {
  const TempDir dir;
  write_text(dir, "bad.model", "just text\n");
  EXPECT_EQ(input_error_of([&] { Tokenizer::load(dir.file("bad.model")); }),
            dir.file("bad.model") + ": not a SentencePiece model (its bytes do not parse as one)");
}

TEST(Tokenizer, RefusesAFolder) {
  const TempDir dir;
  EXPECT_EQ(input_error_of([&] { Tokenizer::load(dir.path().string()); }),
            dir.path().string() + ": a SentencePiece model must be a regular file");
}

TEST(Tokenizer, RefusesAFifoWithoutWaitingForAWriter) {
  // Opening a FIFO for reading blocks until a writer comes: on old code the test hangs.
  const TempDir dir;
  const std::string fifo = dir.file("pipe.model");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(input_error_of([&] { Tokenizer::load(fifo); }),
            fifo + ": a SentencePiece model must be a regular file");
}

TEST(TrainModel, RefusesAVocabularySmallerThanTheBytesAndCharacters) {
  EXPECT_EQ(input_error_of([&] { train_model(sample_text(), {.vocab_size = 100}); }),
            "--vocab-size 100: SentencePiece cannot train a bpe model of it: Vocabulary size is "
            "smaller than required_chars. 100 vs 287. Increase vocab_size or decrease "
            "character_coverage with --character_coverage option.");
}

TEST(TrainModel, ReservesPadBosEosAndUserSymbolsForSentences) {
  const Tokenizer tokenizer =
      Tokenizer::from_bytes(train_model(sample_text(), {.vocab_size = 600,
                                                        .type = ModelType::kUnigram,
                                                        .sentences = true,
                                                        .pad_piece = true,
                                                        .user_symbols = {"<2en>", "<2es>"}}),
                            "m");
  EXPECT_EQ(tokenizer.pad_id(), 0);
  EXPECT_EQ(tokenizer.bos_id(), 2);
  EXPECT_EQ(tokenizer.eos_id(), 3);
  // The tags are pieces after the reserved four; a sentence starts with a word-boundary mark,
  // which decoding drops.
  EXPECT_EQ(tokenizer.piece_id("<2en>"), 4);
  EXPECT_EQ(tokenizer.piece_id("<2es>"), 5);
  EXPECT_EQ(tokenizer.piece_id("<2fr>"), -1);
  EXPECT_EQ(tokenizer.user_pieces(), (std::vector<std::string>{"<2en>", "<2es>"}));
  const std::vector<int> ids = tokenizer.encode("kalo mine");
  EXPECT_EQ(tokenizer.decode(ids), "kalo mine");
  EXPECT_EQ(tokenizer.encode("kalo mine <2es>").back(), 5);
}

TEST(TrainModel, RunningTextHasNoPad) {
  const Tokenizer tokenizer =
      Tokenizer::from_bytes(train_model(sample_text(), {.vocab_size = 300}), "m");
  EXPECT_EQ(tokenizer.pad_id(), -1);
  EXPECT_EQ(tokenizer.bos_id(), 1);
  EXPECT_EQ(tokenizer.eos_id(), 2);
  EXPECT_TRUE(tokenizer.user_pieces().empty());
}

TEST(TrainModel, RefusesATagWithASpace) {
  EXPECT_EQ(input_error_of([&] {
              train_model(sample_text(), {.vocab_size = 600, .user_symbols = {"<2 en>"}});
            }),
            "--tags '<2 en>': a tag is one piece of text without spaces or commas");
}

}  // namespace
}  // namespace mpipe::tokenize
