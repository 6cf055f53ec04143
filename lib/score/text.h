// UTF-8 text as sacreBLEU's Python sees it: code points, and str.isspace's whitespace.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mpipe::score {

// The code point that starts at byte `pos` of `text`, advancing `pos` past it. A byte that does
// not start a valid UTF-8 sequence (a stray continuation byte, a truncated or overlong sequence,
// a surrogate) is one code point of its own, U+DC80 + byte, as Python's surrogateescape reads it.
char32_t next_code_point(std::string_view text, std::size_t& pos);

// The code points of `text` (see next_code_point).
std::u32string decode_utf8(std::string_view text);

// Python's str.isspace: ASCII's \t \n \v \f \r, \x1c-\x1f and space, U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F and U+3000.
bool is_space(char32_t c);

// Python's str.split(): the words between runs of whitespace, none empty.
std::vector<std::string_view> split_words(std::string_view text);

// Python's str.rstrip(): `text` without its trailing whitespace.
std::string_view strip_trailing_space(std::string_view text);

}  // namespace mpipe::score
