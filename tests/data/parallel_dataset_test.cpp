// Tests for ParallelDataset: the three tensors of a pair (padding, bos and eos), what it
// describes, and each refusal: lengths, tokenizer, manifest, a shard changed during the run.
#include "data/parallel_dataset.h"

#include <gtest/gtest.h>

#include <vector>

#include "checkpoint/file_digest.h"
#include "data/pair_files.h"
#include "data/pair_shard_writer.h"
#include "data/shard_manifest.h"
#include "data/test_files.h"
#include "data/token_shard_files.h"
#include "support/input_error_of.h"

namespace mpipe::data {
namespace {

using mpipe::testing::input_error_of;
using testing::pair_tokenizer_bytes;
using testing::TempDir;
using testing::write_plain;

// Ids of the test tokenizer.
constexpr float kPad = 0;
constexpr float kBos = 2;
constexpr float kEos = 3;

// Training pairs: source 3 tokens / target 1, source 2 / target 3; validation: one pair.
void write_shards(const TempDir& dir) {
  write_plain(dir.file("t.model"), pair_tokenizer_bytes());
  const std::vector<TokenPair> train{{{4, 10, 11}, {12}}, {{5, 13}, {14, 15, 16}}};
  write_pair_shard(dir.file("pairs_train.bin"), train, 300);
  const std::vector<TokenPair> val{{{4, 20}, {21, 22}}};
  write_pair_shard(dir.file("pairs_val.bin"), val, 300);
}

DataConfig pairs_config(const TempDir& dir, int64_t source_len = 5, int64_t target_len = 4) {
  DataConfig config;
  config.kind = DatasetKind::kPairs;
  config.train_shards = {dir.file("pairs_train.bin")};
  config.val_shards = {dir.file("pairs_val.bin")};
  config.tokenizer = dir.file("t.model");
  config.source_len = source_len;
  config.target_len = target_len;
  return config;
}

std::vector<float> values(const Tensor& tensor) {
  return std::vector<float>(tensor.data(), tensor.data() + tensor.numel());
}

TEST(ParallelDataset, SourceEndsWithEosTargetInStartsWithBosTargetsEndWithEosAllPadded) {
  const TempDir dir;
  write_shards(dir);
  const ParallelDataset data(pairs_config(dir));
  EXPECT_EQ(data.size(Split::kTrain), 2);
  EXPECT_EQ(data.size(Split::kTest), 1);
  const std::vector<int64_t> indices{1, 0};
  const std::vector<Tensor> inputs = data.input_tensors(Split::kTrain, indices, 0, 0);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].shape(), (Shape{2, 5}));
  EXPECT_EQ(values(inputs[0]),
            (std::vector<float>{5, 13, kEos, kPad, kPad, 4, 10, 11, kEos, kPad}));
  EXPECT_EQ(inputs[1].shape(), (Shape{2, 4}));
  EXPECT_EQ(values(inputs[1]), (std::vector<float>{kBos, 14, 15, 16, kBos, 12, kPad, kPad}));
  const Tensor targets = data.targets(Split::kTrain, indices);
  EXPECT_EQ(targets.shape(), (Shape{2, 4}));
  EXPECT_EQ(values(targets), (std::vector<float>{14, 15, 16, kEos, 12, kEos, kPad, kPad}));
  // inputs() is the source, the first of the inputs.
  EXPECT_EQ(values(data.inputs(Split::kTrain, indices, 0, 0)), values(inputs[0]));
  const std::vector<int64_t> first{0};
  EXPECT_EQ(values(data.targets(Split::kTest, first)), (std::vector<float>{21, 22, kEos, kPad}));
}

TEST(ParallelDataset, DescribesTwoNamedInputsPaddedTargetsAndAKeyedOrder) {
  const TempDir dir;
  write_shards(dir);
  const ParallelDataset data(pairs_config(dir));
  const DataSchema schema = data.schema();
  EXPECT_EQ(schema.name, "pairs");
  ASSERT_EQ(schema.inputs.size(), 2u);
  EXPECT_EQ(schema.inputs[0].name, "source");
  EXPECT_EQ(schema.inputs[0].shape, (Shape{5}));
  EXPECT_EQ(schema.inputs[0].vocab, 300);
  EXPECT_EQ(schema.inputs[1].name, "target_in");
  EXPECT_EQ(schema.inputs[1].shape, (Shape{4}));
  EXPECT_EQ(schema.inputs[1].vocab, 300);
  EXPECT_EQ(schema.target, (Shape{4}));
  EXPECT_EQ(schema.classes, 300);
  EXPECT_EQ(schema.pad_target, 0);
  EXPECT_EQ(data.input_shape(), (Shape{5}));
  EXPECT_EQ(data.input_vocab(), 300);
  EXPECT_EQ(data.example_order(), ExampleOrder::kKeyed);
  EXPECT_EQ(data.test_target_bytes(1), std::nullopt);
  EXPECT_EQ(make_dataset(pairs_config(dir), 1)->name(), "pairs");
}

TEST(ParallelDataset, RefusesPairsLongerThanTheLengthsNamingWhatTheyNeed) {
  const TempDir dir;
  write_shards(dir);
  // The training shard's longest source is 3 tokens (+ eos), its longest target 3 (+ bos/eos).
  const std::string needs = dir.file("pairs_train.bin") +
                            ": its longest pairs need data.source_len >= 4 and data.target_len "
                            ">= 4 (with eos, and bos), got ";
  const std::string fix = "; or leave them out with mpipe tokenize-pairs --max-len";
  EXPECT_EQ(input_error_of([&] { ParallelDataset data(pairs_config(dir, 3, 4)); }),
            needs + "3 and 4" + fix);
  EXPECT_EQ(input_error_of([&] { ParallelDataset data(pairs_config(dir, 4, 3)); }),
            needs + "4 and 3" + fix);
  EXPECT_EQ(ParallelDataset(pairs_config(dir, 4, 4)).size(Split::kTrain), 2);
}

TEST(ParallelDataset, RefusesATokenizerWithoutPadAndAMissingOne) {
  const TempDir dir;
  write_shards(dir);
  write_plain(dir.file("lm.model"),
              tokenize::train_model(testing::made_up_sentences(), {.vocab_size = 300}));
  DataConfig config = pairs_config(dir);
  config.tokenizer = dir.file("lm.model");
  EXPECT_EQ(input_error_of([&] { ParallelDataset data(config); }),
            "data.tokenizer " + dir.file("lm.model") +
                ": pairs need pad, bos and eos pieces, and it has no pad piece (mpipe "
                "tokenize-pairs trains such a tokenizer)");
  config.tokenizer = "";
  EXPECT_EQ(input_error_of([&] { ParallelDataset data(config); }),
            "data.tokenizer: pairs need the tokenizer their shards were made with");
}

TEST(ParallelDataset, RefusesAnEmptySplit) {
  const TempDir dir;
  write_shards(dir);
  write_pair_shard(dir.file("pairs_val.bin"), {}, 300);
  EXPECT_EQ(input_error_of([&] { ParallelDataset data(pairs_config(dir)); }),
            "data.val: no pairs in 1 shard(s)");
}

TEST(ParallelDataset, RefusesAShardTheManifestDoesNotListAndAnotherTokenizer) {
  const TempDir dir;
  write_shards(dir);
  const std::string crc32 =
      checkpoint::crc32_hex(checkpoint::digest_file(dir.file("t.model")).crc32);
  write_shard_manifest(dir.path().string(),
                       {.tokenizer_crc32 = crc32, .vocab = 300, .shards = {"pairs_val.bin"}});
  EXPECT_EQ(input_error_of([&] { ParallelDataset data(pairs_config(dir)); }),
            dir.file("pairs_train.bin") + ": not one of the shards that " +
                dir.file("shards.json") +
                " lists (left by another tokenize, maybe of another tokenizer)");
  write_shard_manifest(dir.path().string(), {.tokenizer_crc32 = "12345678",
                                             .vocab = 300,
                                             .shards = {"pairs_train.bin", "pairs_val.bin"}});
  EXPECT_EQ(input_error_of([&] { ParallelDataset data(pairs_config(dir)); }),
            "data.tokenizer " + dir.file("t.model") + ": crc32 " + crc32 + ", but " +
                dir.file("shards.json") +
                " records its shards as made with a tokenizer of crc32 12345678");
}

TEST(ParallelDataset, CheckContentsScansEveryTokenInParts) {
  const TempDir dir;
  write_shards(dir);
  // A validation token above the vocabulary of 300: the second half of the tokens holds it.
  const std::vector<TokenPair> bad{{{4, 20}, {21, 400}}};
  write_pair_shard(dir.file("pairs_val.bin"), bad, 70000);
  const ParallelDataset data(pairs_config(dir));
  EXPECT_EQ(input_error_of([&] { data.check_contents(0, 2); }), "");
  EXPECT_EQ(input_error_of([&] { data.check_contents(1, 2); }),
            dir.file("pairs_val.bin") +
                ": token 3 is 400, not below the vocabulary of 300 "
                "(data.tokenizer " +
                dir.file("t.model") + ")");
}

TEST(ParallelDataset, AShardChangedDuringTheRunGivesZerosAndAReadFault) {
  const TempDir dir;
  write_shards(dir);
  const ParallelDataset data(pairs_config(dir));
  const std::vector<int64_t> indices{0};
  EXPECT_EQ(values(data.targets(Split::kTrain, indices)), (std::vector<float>{12, kEos, 0, 0}));
  // Written over in place (a rename would leave the run's open file as it was).
  testing::write_bytes(dir.file("pairs_train.bin"), testing::pair_shard_bytes({0, 1, 2}, {4, 12}));
  EXPECT_EQ(values(data.input_tensors(Split::kTrain, indices, 0, 0)[1]),
            std::vector<float>(4, 0.0f));
  EXPECT_EQ(data.read_fault().find(dir.file("pairs_train.bin") + ": changed during the run ("), 0u);
  EXPECT_NE(data.read_fault().find("a run's pair shards must stay as they are until it ends"),
            std::string::npos);
}

}  // namespace
}  // namespace mpipe::data
