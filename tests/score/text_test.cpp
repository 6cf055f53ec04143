// Tests for the UTF-8 helpers: code points, and whitespace as Python's str.split sees it.
#include "score/text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace mpipe::score {
namespace {

TEST(DecodeUtf8, CodePoints) {
  EXPECT_EQ(decode_utf8("aé€😀"), (std::u32string{U'a', U'é', U'€', U'😀'}));
}

TEST(DecodeUtf8, InvalidBytesAreOneCodePointEach) {
  // As Python's bytes.decode("utf-8", "surrogateescape"): U+DC00 + byte.
  EXPECT_EQ(decode_utf8("a\x80"), (std::u32string{U'a', 0xDC80}));       // stray continuation
  EXPECT_EQ(decode_utf8("\xE2\x82"), (std::u32string{0xDCE2, 0xDC82}));  // truncated
  EXPECT_EQ(decode_utf8("\xC0\xAF"), (std::u32string{0xDCC0, 0xDCAF}));  // overlong '/'
  EXPECT_EQ(decode_utf8("\xED\xA0\x80"), (std::u32string{0xDCED, 0xDCA0, 0xDC80}));  // surrogate
  EXPECT_EQ(decode_utf8("\xE2\x82x"), (std::u32string{0xDCE2, 0xDC82, U'x'}));
}

TEST(SplitWords, PythonWhitespace) {
  using Words = std::vector<std::string_view>;
  EXPECT_EQ(split_words("  a \t b\n"), (Words{"a", "b"}));
  // U+00A0, U+3000 and U+0085 are whitespace to Python; U+200B (zero width space) is not.
  EXPECT_EQ(split_words("a\u00a0b\u3000c\u0085d\u200be"), (Words{"a", "b", "c", "d\u200be"}));
  EXPECT_EQ(split_words(""), Words{});
  EXPECT_EQ(split_words(" \u2028 "), Words{});
}

TEST(StripTrailingSpace, PythonRstrip) {
  EXPECT_EQ(strip_trailing_space(" a b \u00a0\n"), " a b");
  EXPECT_EQ(strip_trailing_space("é"), "é");
  EXPECT_EQ(strip_trailing_space(" \t"), "");
}

}  // namespace
}  // namespace mpipe::score
