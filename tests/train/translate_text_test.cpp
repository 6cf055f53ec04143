// encode_source_lines: each line tagged and encoded as a pair shard's source, with eos; a tag
// that is not one of the tokenizer's and a line too long are refused in one line.
#include "train/translate_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/pair_files.h"
#include "support/input_error_of.h"

namespace mpipe::train {
namespace {

using testing::input_error_of;

const tokenize::Tokenizer& tokenizer() {
  static const tokenize::Tokenizer model =
      tokenize::Tokenizer::from_bytes(data::testing::pair_tokenizer_bytes(), "m.model");
  return model;
}

TEST(EncodeSourceLines, TagThenTheSentenceThenEos) {
  const std::vector<std::vector<int>> sources =
      encode_source_lines(tokenizer(), "m.model", "<2es>", {"kalo mine", ""}, 16, "stdin");
  ASSERT_EQ(sources.size(), 2u);
  std::vector<int> expected{tokenizer().piece_id("<2es>")};
  for (int id : tokenizer().encode("kalo mine")) expected.push_back(id);
  expected.push_back(tokenizer().eos_id());
  EXPECT_EQ(sources[0], expected);
  // An empty line is its tag and eos.
  EXPECT_EQ(sources[1], (std::vector<int>{tokenizer().piece_id("<2es>"), tokenizer().eos_id()}));
}

TEST(EncodeSourceLines, ALineOfExactlySourceLenFits) {
  const auto length = static_cast<int64_t>(
      encode_source_lines(tokenizer(), "m.model", "<2en>", {"kalo mine"}, 64, "stdin")[0].size());
  EXPECT_EQ(
      encode_source_lines(tokenizer(), "m.model", "<2en>", {"kalo mine"}, length, "stdin").size(),
      1u);
  EXPECT_EQ(input_error_of([&] {
              encode_source_lines(tokenizer(), "m.model", "<2en>", {"", "kalo mine"}, length - 1,
                                  "--input in.txt");
            }),
            "--input in.txt:2: " + std::to_string(length) +
                " tokens with the tag and eos, more than data.source_len " +
                std::to_string(length - 1));
}

TEST(EncodeSourceLines, RefusesATagTheTokenizerHasNot) {
  EXPECT_EQ(input_error_of([&] {
              encode_source_lines(tokenizer(), "m.model", "<2fr>", {"kalo"}, 16, "stdin");
            }),
            "--to <2fr>: not a piece of m.model (its tags: <2en>, <2es>)");
  // A piece that is not a tag is not one either.
  EXPECT_EQ(input_error_of([&] {
              encode_source_lines(tokenizer(), "m.model", "<pad>", {"kalo"}, 16, "stdin");
            }),
            "--to <pad>: not a piece of m.model (its tags: <2en>, <2es>)");
}

}  // namespace
}  // namespace mpipe::train
