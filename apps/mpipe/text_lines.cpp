// Reading sentences one a line, from a file or stdin.
#include "text_lines.h"

#include <iostream>
#include <iterator>
#include <string_view>

#include "core/error.h"
#include "data/text_corpus.h"

namespace mpipe::app {

std::vector<std::string> read_lines(const std::string& path, const std::string& option) {
  std::string text;
  if (path.empty()) {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    check_input(!std::cin.bad(), "stdin: cannot be read ({})", option);
  } else {
    text = data::read_text_file(path, option);
  }
  std::vector<std::string> lines;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    lines.emplace_back(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  return lines;
}

std::string lines_source(const std::string& path, const std::string& option) {
  return path.empty() ? std::string("stdin") : option + " " + path;
}

}  // namespace mpipe::app
