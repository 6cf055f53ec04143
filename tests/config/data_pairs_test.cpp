// Tests for the `data:` keys of translation pairs (dataset: pairs): the required keys, the
// lengths, the keys pairs refuse, and their resolved settings.
#include <gtest/gtest.h>

#include "config/resolved_settings.h"
#include "experiment_file.h"

namespace mpipe::config {
namespace {

// The error of a file holding `yaml` (lines from 1) followed by a valid model section.
std::string error_of(const std::string& yaml) { return ExperimentFile().error(yaml + kModel); }

const std::string kPairs =
    "data:\n  dataset: pairs\n  train: b/pairs_train.bin\n  val: b/pairs_val.bin\n"
    "  tokenizer: b/tokenizer.model\n";

TEST(DataPairs, ReadsShardsTokenizerAndLengths) {
  const Experiment e =
      ExperimentFile().load(kPairs + "  source_len: 96\n  target_len: 80\n" + kModel);
  EXPECT_EQ(e.data.kind, data::DatasetKind::kPairs);
  EXPECT_EQ(e.data.train_shards, (std::vector<std::string>{"b/pairs_train.bin"}));
  EXPECT_EQ(e.data.val_shards, (std::vector<std::string>{"b/pairs_val.bin"}));
  EXPECT_EQ(e.data.tokenizer, "b/tokenizer.model");
  EXPECT_EQ(e.data.source_len, 96);
  EXPECT_EQ(e.data.target_len, 80);
}

TEST(DataPairs, LengthsDefaultToTokenizePairsMaxLen) {
  const Experiment e = ExperimentFile().load(kPairs + kModel);
  EXPECT_EQ(e.data.source_len, 128);
  EXPECT_EQ(e.data.target_len, 128);
}

TEST(DataPairs, TrainValAndTokenizerAreRequired) {
  EXPECT_EQ(error_of("data:\n  dataset: pairs\n  val: v.bin\n  tokenizer: m.model\n"),
            "exp.yaml:2: data.train: required key is missing");
  EXPECT_EQ(error_of("data:\n  dataset: pairs\n  train: t.bin\n  tokenizer: m.model\n"),
            "exp.yaml:2: data.val: required key is missing");
  EXPECT_EQ(error_of("data:\n  dataset: pairs\n  train: t.bin\n  val: v.bin\n"),
            "exp.yaml:2: data.tokenizer: required key is missing");
}

TEST(DataPairs, LengthsHoldATokenAndItsEos) {
  EXPECT_EQ(error_of(kPairs + "  source_len: 1\n"),
            "exp.yaml:6: data.source_len: must be >= 2, got 1");
  EXPECT_EQ(error_of(kPairs + "  target_len: 0\n"),
            "exp.yaml:6: data.target_len: must be >= 2, got 0");
  EXPECT_EQ(error_of(kPairs + "  target_len: many\n"),
            "exp.yaml:6: data.target_len: expected an integer, got 'many'");
}

TEST(DataPairs, VocabAndSeqLenAreRefused) {
  EXPECT_EQ(error_of(kPairs + "  vocab: 300\n"),
            "exp.yaml:6: data.vocab: not with pairs, whose vocabulary is data.tokenizer's");
  EXPECT_EQ(error_of(kPairs + "  seq_len: 64\n"),
            "exp.yaml:6: data.seq_len: not with pairs, which have data.source_len and "
            "data.target_len");
}

TEST(DataPairs, LengthsAreOnlyForPairs) {
  EXPECT_EQ(error_of("data:\n  dataset: text\n  source_len: 64\n"),
            "exp.yaml:3: data.source_len: only for data.dataset: pairs");
  EXPECT_EQ(error_of("data:\n  target_len: 64\n"),
            "exp.yaml:2: data.target_len: only for data.dataset: pairs");
}

TEST(DataPairs, ResolvedSettingsListShardsAndLengthsOnlyForPairs) {
  const auto pairs = resolved_settings(ExperimentFile().load(kPairs + kModel));
  EXPECT_EQ(pairs.at("data.dataset"), "pairs");
  EXPECT_EQ(pairs.at("data.train"), "[b/pairs_train.bin]");
  EXPECT_EQ(pairs.at("data.tokenizer"), "b/tokenizer.model");
  EXPECT_EQ(pairs.at("data.source_len"), "128");
  EXPECT_EQ(pairs.at("data.target_len"), "128");
  const auto text = resolved_settings(ExperimentFile().load("data:\n  dataset: text\n" + kModel));
  EXPECT_FALSE(text.contains("data.source_len"));
}

}  // namespace
}  // namespace mpipe::config
