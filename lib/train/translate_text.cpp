// Tagging, encoding and length checks of the lines `mpipe translate` reads.
#include "train/translate_text.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"
#include "data/tokenize_pairs.h"

namespace mpipe::train {

std::vector<std::vector<int>> encode_source_lines(const tokenize::Tokenizer& tokenizer,
                                                  const std::string& model, const std::string& tag,
                                                  const std::vector<std::string>& lines,
                                                  int64_t source_len, const std::string& input) {
  const std::vector<std::string> tags = tokenizer.user_pieces();
  check_input(std::find(tags.begin(), tags.end(), tag) != tags.end(),
              "--to {}: not a piece of {} ({})", tag, model,
              tags.empty() ? std::string("it has no tags")
                           : fmt::format("its tags: {}", fmt::join(tags, ", ")));
  std::vector<std::vector<int>> sources;
  sources.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = fmt::format("{}:{}", input, i + 1);
    std::vector<int> ids = data::encode_source(tokenizer, tag + " " + lines[i], model, where);
    ids.push_back(tokenizer.eos_id());
    check_input(std::ssize(ids) <= source_len,
                "{}: {} tokens with the tag and eos, more than data.source_len {}", where,
                ids.size(), source_len);
    sources.push_back(std::move(ids));
  }
  return sources;
}

}  // namespace mpipe::train
