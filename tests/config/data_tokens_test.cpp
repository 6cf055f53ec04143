// Tests for the `data:` keys of token shards (dataset: tokens): lists or globs, the required
// keys, the tokenizer against data.vocab, and their resolved settings.
#include <gtest/gtest.h>

#include "config/resolved_settings.h"
#include "experiment_file.h"

namespace mpipe::config {
namespace {

using Settings = std::map<std::string, std::string>;

// The error of a file holding `yaml` (lines from 1) followed by a valid model section.
std::string error_of(const std::string& yaml) { return ExperimentFile().error(yaml + kModel); }

TEST(DataTokens, ShardsAreAGlobStringOrAList) {
  const Experiment e = ExperimentFile().load(
      "data:\n  dataset: tokens\n  train: s/train_*.bin\n  val: [s/v0.bin, s/v1.bin]\n"
      "  tokenizer: s/t.model\n" +
      kModel);
  EXPECT_EQ(e.data.kind, data::DatasetKind::kTokens);
  EXPECT_EQ(e.data.train_shards, (std::vector<std::string>{"s/train_*.bin"}));
  EXPECT_EQ(e.data.val_shards, (std::vector<std::string>{"s/v0.bin", "s/v1.bin"}));
  EXPECT_EQ(e.data.tokenizer, "s/t.model");
}

TEST(DataTokens, TrainAndValAreRequired) {
  EXPECT_EQ(error_of("data:\n  dataset: tokens\n  val: v.bin\n"),
            "exp.yaml:2: data.train: required key is missing");
  EXPECT_EQ(error_of("data:\n  dataset: tokens\n  train: t.bin\n"),
            "exp.yaml:2: data.val: required key is missing");
}

TEST(DataTokens, AnEmptyShardListIsRefused) {
  EXPECT_EQ(error_of("data:\n  dataset: tokens\n  train: []\n  val: v.bin\n"),
            "exp.yaml:3: data.train: expected at least one shard file or glob, got []");
  EXPECT_EQ(error_of("data:\n  dataset: tokens\n  train: t.bin\n  val: {a: 1}\n"),
            "exp.yaml:4: data.val: expected a shard file or glob, or a list of them, got a map");
}

TEST(DataTokens, VocabIsRefusedBesideATokenizer) {
  EXPECT_EQ(error_of("data:\n  dataset: tokens\n  train: t.bin\n  val: v.bin\n"
                     "  tokenizer: m.model\n  vocab: 300\n"),
            "exp.yaml:6: data.vocab: not with data.tokenizer, whose vocabulary the data has");
}

TEST(DataTokens, ResolvedSettingsListTheShardsOnlyForTokenData) {
  const Settings tokens = resolved_settings(ExperimentFile().load(
      "data:\n  dataset: tokens\n  train: [a.bin, b.bin]\n  val: v.bin\n" + kModel));
  EXPECT_EQ(tokens.at("data.train"), "[a.bin, b.bin]");
  EXPECT_EQ(tokens.at("data.val"), "[v.bin]");
  EXPECT_EQ(tokens.at("data.tokenizer"), "");
  const Settings text =
      resolved_settings(ExperimentFile().load("data:\n  dataset: text\n" + kModel));
  EXPECT_FALSE(text.contains("data.train"));
}

}  // namespace
}  // namespace mpipe::config
