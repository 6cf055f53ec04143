// Tests for link rates: tc's decimal bit rates and byte sizes per second, and the bad ones.
#include "config/link_rate.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace mpipe::config {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_link_rate(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(LinkRate, BitRatesAreDecimalBitsPerSecond) {
  EXPECT_DOUBLE_EQ(parse_link_rate("100mbit"), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("1Gbit"), 125e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("2.5gbit"), 312.5e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("800kbit"), 1e5);
  EXPECT_DOUBLE_EQ(parse_link_rate("8bit"), 1.0);
}

TEST(LinkRate, ByteSizesArePerSecond) {
  EXPECT_DOUBLE_EQ(parse_link_rate("125MB"), 125.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(parse_link_rate("1GiB"), 1024.0 * 1024 * 1024);
}

TEST(LinkRate, BadRatesAreRefusedWithOneLine) {
  EXPECT_EQ(error_of("fast"), "expected a rate such as 100mbit, 1gbit or 125MB, got 'fast'");
  EXPECT_EQ(error_of("mbit"), "expected a rate such as 100mbit, 1gbit or 125MB, got 'mbit'");
  EXPECT_EQ(error_of("10xbit"), "expected a rate such as 100mbit, 1gbit or 125MB, got '10xbit'");
  EXPECT_EQ(error_of("0mbit"), "must be > 0, got 0mbit");
  EXPECT_EQ(error_of("0MB"), "must be > 0, got 0MB");
}

}  // namespace
}  // namespace mpipe::config
