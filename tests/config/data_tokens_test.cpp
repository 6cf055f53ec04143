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

TEST(DataTokens, TrainIsAlsoAMixOfShardListsWithWeights) {
  const Experiment e = ExperimentFile().load(
      "data:\n  dataset: tokens\n  train:\n    - {shards: a/train_*.bin, weight: 3}\n"
      "    - {shards: [b0.bin, b1.bin], weight: 0.5}\n  val: v.bin\n" +
      kModel);
  EXPECT_TRUE(e.data.train_shards.empty());
  ASSERT_EQ(e.data.train_mix.size(), 2u);
  EXPECT_EQ(e.data.train_mix[0].shards, (std::vector<std::string>{"a/train_*.bin"}));
  EXPECT_EQ(e.data.train_mix[0].weight, 3);
  EXPECT_EQ(e.data.train_mix[1].shards, (std::vector<std::string>{"b0.bin", "b1.bin"}));
  EXPECT_EQ(e.data.train_mix[1].weight, 0.5);
  EXPECT_EQ(resolved_settings(e).at("data.train"),
            "[{shards: [a/train_*.bin], weight: 3}, {shards: [b0.bin, b1.bin], weight: 0.5}]");
  // The resolved value, passed back with --set, gives the same mix.
  const Experiment again =
      ExperimentFile().load("data:\n  dataset: tokens\n  train: x.bin\n  val: v.bin\n" + kModel,
                            {"data.train=" + resolved_settings(e).at("data.train")});
  EXPECT_EQ(resolved_settings(again), resolved_settings(e));
}

// The error of a mix whose lists are `lists` (YAML flow), data.train on line 3.
std::string mix_error(const std::string& lists) {
  return error_of("data:\n  dataset: tokens\n  train: " + lists + "\n  val: v.bin\n");
}

TEST(DataTokens, RefusesABadListOfAMixNamingItsKey) {
  EXPECT_EQ(mix_error("[{shards: a.bin, weight: 0}]"),
            "exp.yaml:3: data.train[0].weight: must be > 0, got 0");
  EXPECT_EQ(mix_error("[{shards: a.bin, weight: 1}, {shards: b.bin, weight: -2}]"),
            "exp.yaml:3: data.train[1].weight: must be > 0, got -2");
  EXPECT_EQ(mix_error("[{shards: a.bin, weight: lots}]"),
            "exp.yaml:3: data.train[0].weight: expected a number, got 'lots'");
  EXPECT_EQ(mix_error("[{shards: a.bin, weight: .inf}]"),
            "exp.yaml:3: data.train[0].weight: expected a finite number, got '.inf'");
  EXPECT_EQ(mix_error("[{shards: a.bin}]"),
            "exp.yaml:3: data.train[0].weight: required key is missing");
  EXPECT_EQ(mix_error("[{shards: [], weight: 1}]"),
            "exp.yaml:3: data.train[0].shards: expected at least one shard file or glob, got []");
  EXPECT_EQ(mix_error("[{weight: 1}]"),
            "exp.yaml:3: data.train[0].shards: required key is missing");
  EXPECT_EQ(mix_error("[{shards: a.bin, weight: 1, tokenizer: t.model}]"),
            "exp.yaml:3: data.train[0].tokenizer: unknown key (known: shards, weight)");
  EXPECT_EQ(mix_error("[{shards: a.bin, weight: 1}, b.bin]"),
            "exp.yaml:3: data.train[1]: expected {shards: ..., weight: ...} like the other lists "
            "of the mix, got 'b.bin'");
}

TEST(DataTokens, AMixIsOnlyForTokens) {
  EXPECT_EQ(error_of("data:\n  dataset: pairs\n  train: [{shards: a.bin, weight: 1}]\n"
                     "  val: v.bin\n  tokenizer: t.model\n"),
            "exp.yaml:3: data.train: a weighted mix is only for tokens");
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
