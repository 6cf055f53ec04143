// Tests for TokenDataset: windows over shards, glob lists, the vocabulary, and each refusal.
#include "data/token_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "checkpoint/file_digest.h"
#include "data/shard_manifest.h"
#include "data/test_files.h"
#include "data/token_shard_files.h"
#include "support/input_error_of.h"
#include "tokenize/tokenizer.h"

namespace mpipe::data {
namespace {

using mpipe::testing::input_error_of;
using testing::counting;
using testing::shard_bytes;
using testing::TempDir;
using testing::write_bytes;
using testing::write_plain;

DataConfig tokens_config(const TempDir& dir, int64_t seq_len = 3) {
  DataConfig config;
  config.kind = DatasetKind::kTokens;
  config.seq_len = seq_len;
  config.vocab = 1000;
  config.train_shards = {dir.file("train_*.bin")};
  config.val_shards = {dir.file("val.bin")};
  return config;
}

std::vector<float> values(const Tensor& tensor) {
  return std::vector<float>(tensor.data(), tensor.data() + tensor.numel());
}

TEST(TokenDataset, ExamplesAreWindowsAtStrideSeqLenThatNeverCrossAShardEnd) {
  const TempDir dir;
  // 10 tokens: windows [0, 4), [3, 7), [6, 10); 6 tokens: [0, 4) only (the next needs 7).
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(100, 10)));
  write_bytes(dir.file("train_1.bin"), shard_bytes(counting(200, 6)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(300, 4)));
  const TokenDataset data(tokens_config(dir));
  EXPECT_EQ(data.size(Split::kTrain), 4);
  EXPECT_EQ(data.size(Split::kTest), 1);
  const std::vector<int64_t> indices{2, 3, 0};
  EXPECT_EQ(values(data.inputs(Split::kTrain, indices, 0, 0)),
            (std::vector<float>{106, 107, 108, 200, 201, 202, 100, 101, 102}));
  EXPECT_EQ(values(data.targets(Split::kTrain, indices)),
            (std::vector<float>{107, 108, 109, 201, 202, 203, 101, 102, 103}));
  EXPECT_EQ(data.inputs(Split::kTrain, indices, 0, 0).shape(), (Shape{3, 3}));
  const std::vector<int64_t> first{0};
  EXPECT_EQ(values(data.targets(Split::kTest, first)), (std::vector<float>{301, 302, 303}));
}

TEST(TokenDataset, DescribesTokenIdsOfItsVocabularyAndAKeyedOrder) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  const TokenDataset data(tokens_config(dir));
  const DataSchema schema = data.schema();
  EXPECT_EQ(schema.name, "tokens");
  ASSERT_EQ(schema.inputs.size(), 1u);
  EXPECT_EQ(schema.inputs[0].name, kMainInputName);
  EXPECT_EQ(schema.inputs[0].shape, (Shape{3}));
  EXPECT_EQ(schema.target, (Shape{3}));
  EXPECT_EQ(schema.inputs[0].vocab, 1000);
  EXPECT_EQ(schema.classes, 1000);
  EXPECT_EQ(data.example_order(), ExampleOrder::kKeyed);
  EXPECT_TRUE(data.train_mix().empty());               // one list: the plain keyed order
  EXPECT_EQ(data.test_target_bytes(1), std::nullopt);  // no tokenizer: no bytes per token
}

TEST(TokenDataset, WithATokenizerItsVocabularyIsTheTokenizersAndTargetsCountTheirBytes) {
  const TempDir dir;
  // Text of made-up words; the tokenizer learns pieces longer than a byte from it.
  std::string text;
  for (int line = 0; line < 200; ++line) {
    for (int word = 0; word < 6; ++word)
      text += std::string("kalomine", (line * 7 + word) % 8) + " ";
    text += "sutavo\n";
  }
  const std::string model = tokenize::train_model(text, {.vocab_size = 300});
  write_plain(dir.file("t.model"), model);
  const tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(dir.file("t.model"));
  const std::vector<int> ids = tokenizer.encode(text);
  std::vector<uint32_t> tokens(ids.begin(), ids.end());
  write_bytes(dir.file("train_0.bin"), shard_bytes(tokens));
  write_bytes(dir.file("val.bin"), shard_bytes(tokens));
  DataConfig config = tokens_config(dir, 5);
  config.tokenizer = dir.file("t.model");
  const TokenDataset data(config);
  EXPECT_EQ(data.input_vocab(), 300);
  EXPECT_EQ(data.num_classes(), 300);
  // The targets of windows [0, n) are tokens [1, 5n] of the shard: the bytes they decode to.
  for (int64_t n : {int64_t{1}, int64_t{7}, data.size(Split::kTest)}) {
    const std::vector<int> targets(ids.begin() + 1, ids.begin() + 1 + 5 * n);
    EXPECT_EQ(data.test_target_bytes(n), static_cast<int64_t>(tokenizer.decode(targets).size()))
        << n << " examples";
  }
}

TEST(TokenDataset, MakeDatasetBuildsIt) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  EXPECT_EQ(make_dataset(tokens_config(dir), 1)->name(), "tokens");
}

TEST(ShardFiles, ExpandsEachPatternSortedInTheOrderGiven) {
  const TempDir dir;
  for (const char* name : {"b_2.bin", "b_1.bin", "a.bin"}) write_bytes(dir.file(name), "");
  EXPECT_EQ(
      shard_files({dir.file("b_*.bin"), dir.file("a.bin")}, "data.train"),
      (std::vector<std::string>{dir.file("b_1.bin"), dir.file("b_2.bin"), dir.file("a.bin")}));
}

TEST(ShardFiles, RefusesAPatternThatMatchesNothing) {
  const TempDir dir;
  EXPECT_EQ(input_error_of([&] { shard_files({dir.file("x_*.bin")}, "data.val"); }),
            "data.val: no file matches '" + dir.file("x_*.bin") + "'");
}

TEST(TokenDataset, RefusesAValidationSetWithoutOneWindow) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 3)));  // seq_len + 1 = 4 needed
  EXPECT_EQ(input_error_of([&] { TokenDataset data(tokens_config(dir)); }),
            "data.val: 3 tokens in 1 shard(s), none with a window of seq_len + 1 = 4 tokens");
}

TEST(TokenDataset, RefusesTrainingShardsWithFewerTokensThanOneWindow) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 3)));
  write_bytes(dir.file("train_1.bin"), shard_bytes({}));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  EXPECT_EQ(input_error_of([&] { TokenDataset data(tokens_config(dir)); }),
            "data.train: 3 tokens in 2 shard(s), none with a window of seq_len + 1 = 4 tokens");
}

TEST(TokenDataset, RefusesATokenOutsideTheVocabularyNamingTheShard) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes({1, 2, 1000, 3}));
  const TokenDataset data(tokens_config(dir));
  EXPECT_EQ(input_error_of([&] { data.check_contents(0, 1); }),
            dir.file("val.bin") +
                ": token 2 is 1000, not below the vocabulary of 1000 "
                "(data.vocab)");
}

TEST(TokenDataset, PartsOfTheContentsCheckTheirOwnShareOfTheTokens) {
  const TempDir dir;
  // 14 tokens end to end (10 train, then 4 validation); the bad one is the 13th (index 12).
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes({1, 2, 1000, 3}));
  const TokenDataset data(tokens_config(dir));
  // Two parts: tokens [0, 7) and [7, 14); three: [0, 4), [4, 9), [9, 14).
  EXPECT_NO_THROW(data.check_contents(0, 2));
  EXPECT_EQ(
      input_error_of([&] { data.check_contents(1, 2); }),
      dir.file("val.bin") + ": token 2 is 1000, not below the vocabulary of 1000 (data.vocab)");
  EXPECT_NO_THROW(data.check_contents(0, 3));
  EXPECT_NO_THROW(data.check_contents(1, 3));
  EXPECT_THROW(data.check_contents(2, 3), InputError);
  // More parts than tokens: empty parts check nothing.
  for (int part = 0; part < 20; ++part) {
    if (part * 14 / 20 <= 12 && 12 < (part + 1) * 14 / 20) {
      EXPECT_THROW(data.check_contents(part, 20), InputError) << part;
    } else {
      EXPECT_NO_THROW(data.check_contents(part, 20)) << part;
    }
  }
}

TEST(TokenDataset, RefusesAVocabularyThatFloatsCannotHoldExactly) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  DataConfig config = tokens_config(dir);
  config.vocab = int64_t{1} << 24;
  EXPECT_EQ(input_error_of([&] { TokenDataset data(config); }),
            "data.vocab: a vocabulary of 16777216 token ids; token ids are stored as floats, so "
            "it must be in [2, 2^24)");
}

TEST(TokenDataset, RefusesADamagedShardNamingIt) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("train_1.bin"), shard_bytes(counting(0, 10), 7));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  EXPECT_EQ(input_error_of([&] { TokenDataset data(tokens_config(dir)); }),
            dir.file("train_1.bin") +
                ": not a token shard: magic 7, expected 20240520 (uint16 tokens) or 20240801 "
                "(uint32 tokens)");
}

TEST(TokenDataset, RefusesAnUnreadableTokenizer) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  write_bytes(dir.file("bad.model"), "not a model");
  DataConfig config = tokens_config(dir);
  config.tokenizer = dir.file("bad.model");
  EXPECT_EQ(input_error_of([&] { TokenDataset data(config); }),
            dir.file("bad.model") + ": not a SentencePiece model (its bytes do not parse as one)");
}

TEST(TokenDataset, RefusesAShardThatTheFoldersManifestDoesNotList) {
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("train_1.bin"), shard_bytes(counting(0, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  write_shard_manifest(
      dir.path().string(),
      {.tokenizer_crc32 = "12345678", .vocab = 1000, .shards = {"train_0.bin", "val.bin"}});
  EXPECT_EQ(input_error_of([&] { TokenDataset data(tokens_config(dir)); }),
            dir.file("train_1.bin") + ": not one of the shards that " + dir.file("shards.json") +
                " lists (left by another tokenize, maybe of another tokenizer)");
}

TEST(TokenDataset, RefusesATokenizerOtherThanTheOneTheManifestRecords) {
  const TempDir dir;
  std::string text;
  for (int line = 0; line < 100; ++line) text += "kalo mine sutavo\n";
  write_plain(dir.file("t.model"), tokenize::train_model(text, {.vocab_size = 300}));
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(0, 10, 300)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4, 300)));
  write_shard_manifest(
      dir.path().string(),
      {.tokenizer_crc32 = "12345678", .vocab = 300, .shards = {"train_0.bin", "val.bin"}});
  DataConfig config = tokens_config(dir);
  config.tokenizer = dir.file("t.model");
  EXPECT_EQ(input_error_of([&] { TokenDataset data(config); }),
            "data.tokenizer " + dir.file("t.model") + ": crc32 " +
                checkpoint::crc32_hex(checkpoint::digest_file(dir.file("t.model")).crc32) +
                ", but " + dir.file("shards.json") +
                " records its shards as made with a tokenizer of crc32 12345678");
}

// A mix of dir's a_*.bin (weight 3) and b_*.bin (weight 1).
DataConfig mix_config(const TempDir& dir) {
  DataConfig config = tokens_config(dir);
  config.train_shards.clear();
  config.train_mix = {{.shards = {dir.file("a_*.bin")}, .weight = 3},
                      {.shards = {dir.file("b_*.bin")}, .weight = 1}};
  return config;
}

TEST(TokenDataset, AMixGivesEachListItsWindowsAsAPartListAfterList) {
  const TempDir dir;
  write_bytes(dir.file("a_0.bin"), shard_bytes(counting(100, 10)));  // 3 windows
  write_bytes(dir.file("b_0.bin"), shard_bytes(counting(200, 6)));   // 1
  write_bytes(dir.file("b_1.bin"), shard_bytes(counting(300, 7)));   // 2
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  const TokenDataset data(mix_config(dir));
  EXPECT_EQ(data.size(Split::kTrain), 6);
  const std::vector<MixPart> mix = data.train_mix();
  ASSERT_EQ(mix.size(), 2u);
  EXPECT_EQ(mix[0].size, 3);
  EXPECT_EQ(mix[0].weight, 3);
  EXPECT_EQ(mix[1].size, 3);
  EXPECT_EQ(mix[1].weight, 1);
  const std::vector<int64_t> indices{3, 5};  // b's first windows
  EXPECT_EQ(values(data.inputs(Split::kTrain, indices, 0, 0)),
            (std::vector<float>{200, 201, 202, 303, 304, 305}));
  // A mix of one list is that list, in the plain keyed order.
  DataConfig one = mix_config(dir);
  one.train_mix.pop_back();
  EXPECT_TRUE(TokenDataset(one).train_mix().empty());
}

TEST(TokenDataset, RefusesAListOfAMixThatMatchesNoFileNamingIt) {
  const TempDir dir;
  write_bytes(dir.file("a_0.bin"), shard_bytes(counting(100, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  EXPECT_EQ(input_error_of([&] { TokenDataset data(mix_config(dir)); }),
            "data.train[1].shards: no file matches '" + dir.file("b_*.bin") + "'");
}

TEST(TokenDataset, RefusesAListOfAMixWithoutOneWindowNamingIt) {
  const TempDir dir;
  write_bytes(dir.file("a_0.bin"), shard_bytes(counting(100, 10)));
  write_bytes(dir.file("b_0.bin"), shard_bytes(counting(200, 3)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  EXPECT_EQ(input_error_of([&] { TokenDataset data(mix_config(dir)); }),
            "data.train[1]: 3 tokens in 1 shard(s), none with a window of seq_len + 1 = 4 tokens");
}

TEST(TokenDataset, RefusesListsMadeWithAnotherTokenizerNamingTheirManifest) {
  const TempDir dir;
  for (const char* folder : {"a", "b"}) std::filesystem::create_directory(dir.file(folder));
  write_bytes(dir.file("a/train_0.bin"), shard_bytes(counting(100, 10)));
  write_bytes(dir.file("b/train_0.bin"), shard_bytes(counting(200, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(0, 4)));
  write_shard_manifest(dir.file("a"),
                       {.tokenizer_crc32 = "0000000a", .vocab = 1000, .shards = {"train_0.bin"}});
  write_shard_manifest(dir.file("b"),
                       {.tokenizer_crc32 = "0000000b", .vocab = 1000, .shards = {"train_0.bin"}});
  DataConfig config = tokens_config(dir);
  config.train_shards.clear();
  config.train_mix = {{.shards = {dir.file("a/train_*.bin")}, .weight = 1},
                      {.shards = {dir.file("b/train_*.bin")}, .weight = 1}};
  EXPECT_EQ(input_error_of([&] { TokenDataset data(config); }),
            dir.file("b/shards.json") +
                ": records its shards as made with a tokenizer of crc32 0000000b, but " +
                dir.file("a/shards.json") +
                " records crc32 0000000a; the shards of a run must share one tokenizer");
}

TEST(TokenDataset, AShardChangedDuringTheRunGivesZerosAndAReadFaultInsteadOfThrowing) {
  // Mid-step, a throw on one rank would leave its peers waiting: the fault is kept for the
  // trainer to agree on.
  const TempDir dir;
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(100, 10)));
  write_bytes(dir.file("val.bin"), shard_bytes(counting(300, 4)));
  const TokenDataset data(tokens_config(dir));
  EXPECT_EQ(data.read_fault(), "");
  const std::vector<int64_t> indices{1, 0};
  EXPECT_EQ(values(data.inputs(Split::kTrain, indices, 0, 0)),
            (std::vector<float>{103, 104, 105, 100, 101, 102}));
  write_bytes(dir.file("train_0.bin"), shard_bytes(counting(100, 5)));
  EXPECT_EQ(values(data.inputs(Split::kTrain, indices, 0, 0)), std::vector<float>(6, 0.0f));
  const std::string fault = dir.file("train_0.bin") +
                            ": changed during the run (1044 bytes when the run opened it, 1034 "
                            "now); a run's token shards must stay as they are until it ends";
  EXPECT_EQ(data.read_fault(), fault);
  // The first fault is kept; the validation shard still reads.
  EXPECT_EQ(values(data.targets(Split::kTrain, indices)), std::vector<float>(6, 0.0f));
  EXPECT_EQ(values(data.targets(Split::kTest, std::vector<int64_t>{0})),
            (std::vector<float>{301, 302, 303}));
  EXPECT_EQ(data.read_fault(), fault);
}

}  // namespace
}  // namespace mpipe::data
