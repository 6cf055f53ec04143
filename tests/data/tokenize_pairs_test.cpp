// Tests for tokenize_pairs (`mpipe tokenize-pairs`): a model with pad, bos, eos and tags, pair
// shards that decode back to the pairs, pairs over --max-len dropped and counted, the manifest,
// and one-line errors for bad inputs.
#include "data/tokenize_pairs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "data/pair_files.h"
#include "data/pair_shard.h"
#include "data/test_files.h"
#include "support/input_error_of.h"

namespace mpipe::data {
namespace {

using mpipe::testing::input_error_of;
using testing::made_up_sentences;
using testing::TempDir;
using testing::write_plain;

// Options that train a model of 300 pieces with two tags on made-up text, over the pair files
// train.tsv and val.tsv of `dir`, into dir/out.
TokenizePairsOptions options_in(const TempDir& dir) {
  write_plain(dir.file("text.txt"), made_up_sentences());
  TokenizePairsOptions options;
  options.train = dir.file("train.tsv");
  options.val = dir.file("val.tsv");
  options.out_dir = dir.file("out");
  options.vocab_size = 300;
  options.text_files = {dir.file("text.txt")};
  options.tags = {"<2en>", "<2es>"};
  return options;
}

// Pair `pair` of a shard decoded: {source's ids, target's text}.
std::pair<std::vector<int>, std::string> decoded(const tokenize::Tokenizer& tokenizer,
                                                 const PairShard& shard, int64_t pair) {
  std::vector<float> values(
      static_cast<size_t>(shard.source_length(pair) + shard.target_length(pair)));
  shard.read_pair(pair, tokenizer.vocab_size(), values.data());
  const std::vector<int> ids(values.begin(), values.end());
  const auto cut = static_cast<size_t>(shard.source_length(pair));
  return {std::vector<int>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(cut)),
          tokenizer.decode(std::span(ids).subspan(cut))};
}

TEST(TokenizePairs, WritesShardsOfTaggedSourcesAndTargetsThatDecodeBack) {
  const TempDir dir;
  write_plain(dir.file("train.tsv"), "<2es> kalo mine\tmine kalo\n<2en> sutavo\tkalo\n");
  write_plain(dir.file("val.tsv"), "kalomine sutavo\tsutavo kalo mi\n");
  const TokenizePairsReport report = tokenize_pairs(options_in(dir));
  EXPECT_EQ(report.model, dir.file("out/tokenizer.model"));
  EXPECT_EQ(report.vocab, 300);
  ASSERT_EQ(report.splits.size(), 2u);
  EXPECT_EQ(report.splits[0].split, "train");
  EXPECT_EQ(report.splits[0].pairs, 2);
  EXPECT_EQ(report.splits[0].dropped, 0);
  EXPECT_EQ(report.splits[1].split, "val");
  const tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(report.model);
  EXPECT_EQ(tokenizer.pad_id(), 0);
  const PairShard train(dir.file("out/pairs_train.bin"));
  EXPECT_EQ(train.num_pairs(), 2);
  EXPECT_EQ(report.splits[0].tokens, train.num_tokens());
  // The tag is its own piece before the source's sentence, which decodes back.
  const auto [source, target] = decoded(tokenizer, train, 0);
  EXPECT_EQ(source.front(), 5);
  EXPECT_EQ(tokenizer.decode(std::span(source).subspan(1)), "kalo mine");
  EXPECT_EQ(target, "mine kalo");
  EXPECT_EQ(decoded(tokenizer, train, 1).first.front(), 4);
  // A source without a tag is a sentence alone.
  const PairShard val(dir.file("out/pairs_val.bin"));
  const auto [val_source, val_target] = decoded(tokenizer, val, 0);
  EXPECT_EQ(tokenizer.decode(val_source), "kalomine sutavo");
  EXPECT_EQ(val_target, "sutavo kalo mi");
}

TEST(TokenizePairs, DropsAndCountsPairsOverMaxLenAndRecordsThemInTheManifest) {
  const TempDir dir;
  std::string long_target;
  for (int i = 0; i < 20; ++i) long_target += "kalomine sutavo ";
  write_plain(dir.file("train.tsv"), "<2es> kalo\tmine\n<2en> kalo\t" + long_target + "\n");
  write_plain(dir.file("val.tsv"), "<2es> kalo\tmine\n");
  TokenizePairsOptions options = options_in(dir);
  options.max_len = 8;
  const TokenizePairsReport report = tokenize_pairs(options);
  EXPECT_EQ(report.splits[0].pairs, 1);
  EXPECT_EQ(report.splits[0].dropped, 1);
  const PairShard train(dir.file("out/pairs_train.bin"));
  EXPECT_LE(train.longest_target() + 1, 8);
  std::ifstream file(dir.file("out/shards.json"));
  const nlohmann::json manifest = nlohmann::json::parse(file);
  EXPECT_EQ(manifest.at("shards"), (std::vector<std::string>{"pairs_train.bin", "pairs_val.bin"}));
  EXPECT_EQ(manifest.at("max_len"), 8);
  EXPECT_EQ(manifest.at("splits").at("train").at("pairs"), 1);
  EXPECT_EQ(manifest.at("splits").at("train").at("dropped"), 1);
  EXPECT_EQ(manifest.at("splits").at("train").at("tokens"), train.num_tokens());
  EXPECT_EQ(manifest.at("splits").at("val").at("pairs"), 1);
}

TEST(TokenizePairs, AppliesAnExistingModelAndRefusesOneWithoutPad) {
  const TempDir dir;
  write_plain(dir.file("train.tsv"), "<2es> kalo\tmine\n");
  write_plain(dir.file("val.tsv"), "<2en> mine\tkalo\n");
  write_plain(dir.file("t.model"), testing::pair_tokenizer_bytes());
  TokenizePairsOptions options = options_in(dir);
  options.vocab_size.reset();
  options.model = dir.file("t.model");
  EXPECT_EQ(tokenize_pairs(options).model, dir.file("t.model"));
  write_plain(dir.file("lm.model"),
              tokenize::train_model(made_up_sentences(), {.vocab_size = 300}));
  options.model = dir.file("lm.model");
  options.out_dir = dir.file("out2");
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }),
            "--model " + dir.file("lm.model") +
                ": pair shards need pad, bos and eos pieces, and it has no pad piece (train one "
                "with tokenize-pairs --vocab-size)");
}

TEST(TokenizePairs, RefusesMalformedLinesNamingFileAndLine) {
  const TempDir dir;
  write_plain(dir.file("val.tsv"), "<2es> kalo\tmine\n");
  const TokenizePairsOptions options = options_in(dir);
  const std::string train = dir.file("train.tsv");
  write_plain(train, "<2es> kalo\tmine\nkalo mine\n");
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }),
            train + ":2: expected SOURCE<TAB>TARGET, one tab, got none");
  write_plain(train, "a\tb\tc\n");
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }),
            train + ":1: expected SOURCE<TAB>TARGET, one tab, got more");
  write_plain(train, "<2es> kalo\t\n");
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }), train + ":1: an empty target");
  write_plain(train, "");
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }), train + ": no pairs (--train)");
  write_plain(train, "<2fr> kalo\tmine\n");
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }),
            train + ":1: the tag '<2fr>' is not a piece of " + dir.file("out/tokenizer.model") +
                " (train it with tokenize-pairs --tags)");
}

TEST(TokenizePairs, RefusesBadOptionsAndEarlierShards) {
  const TempDir dir;
  write_plain(dir.file("train.tsv"), "<2es> kalo\tmine\n");
  write_plain(dir.file("val.tsv"), "<2es> kalo\tmine\n");
  TokenizePairsOptions options = options_in(dir);
  options.max_len = 1;
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }),
            "--max-len: must be >= 2 (a token and its eos), got 1");
  options.max_len = 2;
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }),
            dir.file("train.tsv") +
                ": no pair left: all 1 are longer than --max-len 2 tokens (with eos)");
  options = options_in(dir);
  options.text_files.clear();
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }),
            "tokenize-pairs: give --text, the text the new tokenizer learns from (the training "
            "split's sentences)");
  options = options_in(dir);
  tokenize_pairs(options);
  EXPECT_EQ(input_error_of([&] { tokenize_pairs(options); }),
            dir.file("out") +
                ": holds the shards of an earlier tokenize (pairs_train.bin and 2 more): "
                "remove them or choose another --out");
}

}  // namespace
}  // namespace mpipe::data
