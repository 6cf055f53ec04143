// Tests for pair shards: the writer and reader round trip, and each refusal of a damaged file.
#include "data/pair_shard.h"

#include <gtest/gtest.h>

#include <vector>

#include "data/pair_files.h"
#include "data/pair_shard_writer.h"
#include "data/test_files.h"
#include "data/token_shard_files.h"
#include "support/input_error_of.h"

namespace mpipe::data {
namespace {

using mpipe::testing::input_error_of;
using testing::pair_shard_bytes;
using testing::TempDir;
using testing::write_bytes;

const std::vector<TokenPair> kPairs{{{4, 10, 11}, {12}}, {{5, 13}, {}}, {{4}, {14, 15, 16, 17}}};

// Pair `pair` of `shard` as ids: source then target.
std::vector<float> pair_values(const PairShard& shard, int64_t pair, int64_t vocab = 300) {
  std::vector<float> out(
      static_cast<size_t>(shard.source_length(pair) + shard.target_length(pair)));
  shard.read_pair(pair, vocab, out.data());
  return out;
}

TEST(PairShard, RoundTripsPairsAtEitherWidth) {
  const TempDir dir;
  for (int64_t vocab : {int64_t{300}, int64_t{70000}}) {
    const std::string path = dir.file("pairs_" + std::to_string(vocab) + ".bin");
    write_pair_shard(path, kPairs, vocab);
    const PairShard shard(path);
    EXPECT_EQ(shard.token_bytes(), vocab == 300 ? 2u : 4u);
    EXPECT_EQ(shard.num_pairs(), 3);
    EXPECT_EQ(shard.num_tokens(), 11);
    EXPECT_EQ(shard.longest_source(), 3);
    EXPECT_EQ(shard.longest_target(), 4);
    EXPECT_EQ(shard.source_length(1), 2);
    EXPECT_EQ(shard.target_length(1), 0);
    EXPECT_EQ(pair_values(shard, 0), (std::vector<float>{4, 10, 11, 12}));
    EXPECT_EQ(pair_values(shard, 1), (std::vector<float>{5, 13}));
    EXPECT_EQ(pair_values(shard, 2), (std::vector<float>{4, 14, 15, 16, 17}));
  }
}

TEST(PairShard, LaysOutHeaderOffsetsThenTokens) {
  const TempDir dir;
  write_pair_shard(dir.file("p.bin"), kPairs, 300);
  std::ifstream file(dir.file("p.bin"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), {});
  EXPECT_EQ(bytes,
            pair_shard_bytes({0, 3, 4, 6, 6, 7, 11}, {4, 10, 11, 12, 5, 13, 4, 14, 15, 16, 17}));
}

TEST(PairShard, RefusesAShortFileAndAnotherMagicOrVersion) {
  const TempDir dir;
  const std::string path = dir.file("p.bin");
  write_bytes(path, "abc");
  EXPECT_EQ(input_error_of([&] { PairShard shard(path); }),
            path + ": 3 bytes, shorter than the 1024-byte pair shard header");
  write_bytes(path, pair_shard_bytes({0}, {}, 7));
  EXPECT_EQ(input_error_of([&] { PairShard shard(path); }),
            path +
                ": not a pair shard: magic 7, expected 20250601 (uint16 tokens) or 20250602 "
                "(uint32 tokens)");
  write_bytes(path, testing::shard_bytes({1, 2, 3}));
  EXPECT_EQ(input_error_of([&] { PairShard shard(path); }),
            path +
                ": not a pair shard: magic 20240520, expected 20250601 (uint16 tokens) or "
                "20250602 (uint32 tokens); it is a token shard of mpipe tokenize (pairs come "
                "from mpipe tokenize-pairs)");
  write_bytes(path, pair_shard_bytes({0}, {}, pair_shard::kMagicU16, 2));
  EXPECT_EQ(input_error_of([&] { PairShard shard(path); }),
            path + ": pair shard version 2, expected 1");
}

TEST(PairShard, RefusesCountsThatDoNotFitTheFile) {
  const TempDir dir;
  const std::string path = dir.file("p.bin");
  std::string bytes = pair_shard_bytes({0, 1, 2}, {4, 10});
  write_bytes(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_EQ(input_error_of([&] { PairShard shard(path); }),
            path + ": 1 pairs and 2 tokens in the header need 16 bytes after it, the file has 15");
}

TEST(PairShard, RefusesOffsetsOutOfOrder) {
  const TempDir dir;
  const std::string path = dir.file("p.bin");
  write_bytes(path, pair_shard_bytes({1, 1, 2}, {4, 10}));
  EXPECT_EQ(input_error_of([&] { PairShard shard(path); }),
            path + ": the first pair starts at token 1, not 0");
  write_bytes(path, pair_shard_bytes({0, 2, 1, 2, 2}, {4, 10}));
  EXPECT_EQ(input_error_of([&] { PairShard shard(path); }),
            path + ": pair 0's target ends at token 1, before it starts (2)");
  write_bytes(path, pair_shard_bytes({0, 1, 1}, {4, 10}));
  EXPECT_EQ(input_error_of([&] { PairShard shard(path); }),
            path + ": the last pair ends at token 1, not at the 2 tokens of the header");
}

TEST(PairShard, ReadsRefuseAnIdAtOrAboveTheVocabulary) {
  const TempDir dir;
  write_pair_shard(dir.file("p.bin"), kPairs, 300);
  const PairShard shard(dir.file("p.bin"));
  EXPECT_EQ(input_error_of([&] { pair_values(shard, 2, 15); }),
            dir.file("p.bin") +
                ": token 10 is 17, not below the vocabulary of 15 as at start-up: "
                "the shard changed during the run");
  EXPECT_EQ(input_error_of([&] { shard.check_ids_below(12, "data.tokenizer t.model", 0, 11); }),
            dir.file("p.bin") +
                ": token 3 is 12, not below the vocabulary of 12 "
                "(data.tokenizer t.model)");
}

}  // namespace
}  // namespace mpipe::data
