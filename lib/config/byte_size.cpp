// Parsing byte sizes with binary units.
#include "config/byte_size.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace mpipe::config {
namespace {

// The power of 1024 a unit names, or -1 for an unknown unit. Case does not matter.
int unit_power(std::string unit) {
  for (char& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (unit.empty() || unit == "b") return 0;
  constexpr std::array<char, 4> kPrefixes = {'k', 'm', 'g', 't'};
  for (size_t i = 0; i < kPrefixes.size(); ++i) {
    const std::string p(1, kPrefixes[i]);
    if (unit == p || unit == p + "b" || unit == p + "ib") return static_cast<int>(i) + 1;
  }
  return -1;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

int64_t parse_byte_size(std::string_view text) {
  const std::string_view value = trimmed(text);
  const auto bad = [&] {
    return InputError(fmt::format("expected a size such as 6GiB, 512MiB or 2G, got '{}'", text));
  };
  // The number: digits with at most one decimal point.
  size_t end = 0;
  bool point = false, digits = false;
  for (; end < value.size(); ++end) {
    const char ch = value[end];
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      digits = true;
    } else if (ch == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits) throw bad();
  double number = 0.0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + end, number);
  if (ec != std::errc() || ptr != value.data() + end) throw bad();
  const int power = unit_power(std::string(trimmed(value.substr(end))));
  if (power < 0) throw bad();
  const double bytes = std::floor(number * std::pow(1024.0, power));
  if (bytes < 1.0) throw InputError(fmt::format("must be > 0, got {}", value));
  if (bytes >= 0x1p63) throw InputError(fmt::format("must be < 8 EiB, got {}", value));
  return static_cast<int64_t>(bytes);
}

}  // namespace mpipe::config
