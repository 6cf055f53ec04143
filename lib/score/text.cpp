// UTF-8 decoding and Python's whitespace, for the 13a tokenizer and chrF.
#include "score/text.h"

namespace mpipe::score {

namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

char32_t next_code_point(std::string_view text, std::size_t& pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const char32_t escaped = 0xDC00 + lead;
  int length = 0;
  char32_t value = 0;
  char32_t smallest = 0;  // below it, the sequence is overlong
  if (lead < 0x80) {
    ++pos;
    return lead;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, value = lead & 0x1F, smallest = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, value = lead & 0x0F, smallest = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, value = lead & 0x07, smallest = 0x10000;
  } else {
    ++pos;
    return escaped;
  }
  if (text.size() - pos < static_cast<std::size_t>(length)) {
    ++pos;
    return escaped;
  }
  for (int i = 1; i < length; ++i) {
    const auto byte = static_cast<unsigned char>(text[pos + i]);
    if (!is_continuation(byte)) {
      ++pos;
      return escaped;
    }
    value = (value << 6) | (byte & 0x3F);
  }
  if (value < smallest || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    ++pos;
    return escaped;
  }
  pos += length;
  return value;
}

std::u32string decode_utf8(std::string_view text) {
  std::u32string points;
  points.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) points.push_back(next_code_point(text, pos));
  return points;
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t start = 0;
  bool in_word = false;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t here = pos;
    if (is_space(next_code_point(text, pos))) {
      if (in_word) words.push_back(text.substr(start, here - start));
      in_word = false;
    } else if (!in_word) {
      start = here;
      in_word = true;
    }
  }
  if (in_word) words.push_back(text.substr(start));
  return words;
}

std::string_view strip_trailing_space(std::string_view text) {
  std::size_t end = 0;  // the end of the last code point that is not whitespace
  for (std::size_t pos = 0; pos < text.size();) {
    if (!is_space(next_code_point(text, pos))) end = pos;
  }
  return text.substr(0, end);
}

}  // namespace mpipe::score
