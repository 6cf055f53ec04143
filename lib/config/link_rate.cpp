// parse_link_rate: decimal bit rates (tc's spelling) or byte sizes per second.
#include "config/link_rate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>
#include <utility>

#include "config/byte_size.h"
#include "core/error.h"

namespace mpipe::config {

double parse_link_rate(std::string_view text) {
  std::string lower(text);
  std::ranges::transform(lower, lower.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.ends_with("bit")) {
    constexpr std::array<std::pair<std::string_view, double>, 5> kUnits{
        {{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1.0}}};
    for (const auto& [unit, bits] : kUnits) {
      if (!lower.ends_with(unit)) continue;
      const std::string_view number(lower.data(), lower.size() - unit.size());
      double value = 0.0;
      const auto [end, error] =
          std::from_chars(number.data(), number.data() + number.size(), value);
      if (error != std::errc() || end != number.data() + number.size() || number.empty()) break;
      if (!(value > 0.0)) throw InputError(fmt::format("must be > 0, got {}", text));
      return value * bits / 8.0;
    }
    throw InputError(
        fmt::format("expected a rate such as 100mbit, 1gbit or 125MB, got '{}'", text));
  }
  try {
    return static_cast<double>(parse_byte_size(text));
  } catch (const InputError& e) {
    if (std::string_view(e.what()).starts_with("must")) throw;
    throw InputError(
        fmt::format("expected a rate such as 100mbit, 1gbit or 125MB, got '{}'", text));
  }
}

}  // namespace mpipe::config
