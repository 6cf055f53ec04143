// The text side of `mpipe translate`: source lines to the model's ids, with the checks that
// refuse a line or a tag before anything is translated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenize/tokenizer.h"

namespace mpipe::train {

// Each line as data::ParallelDataset's sources are: "TAG line" through data::encode_source, then
// eos. `model` names the tokenizer's file and `input` the lines' ("--input f.txt", "stdin").
// Throws InputError for a tag that is not one of the tokenizer's tags ("--to <2xx>: not a piece
// of m.model (its tags: <2en>, <2es>)") and for a line longer than source_len with its tag and
// eos ("stdin:3: 20 tokens with the tag and eos, more than data.source_len 16").
std::vector<std::vector<int>> encode_source_lines(const tokenize::Tokenizer& tokenizer,
                                                  const std::string& model, const std::string& tag,
                                                  const std::vector<std::string>& lines,
                                                  int64_t source_len, const std::string& input);

}  // namespace mpipe::train
