// Byte counts in binary units, rounded to nearest or up.
#include "core/byte_format.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

namespace mpipe {
namespace {

constexpr std::array<const char*, 6> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};

// `bytes` in the largest unit it reaches, and that unit's index.
std::pair<double, size_t> in_unit(double bytes) {
  size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < kUnits.size()) {
    bytes /= 1024.0;
    ++unit;
  }
  return {bytes, unit};
}

}  // namespace

std::string format_bytes(double bytes, int decimals) {
  const auto [value, unit] = in_unit(bytes);
  if (unit == 0) return fmt::format("{:.0f} B", value);
  return fmt::format("{:.{}f} {}", value, decimals, kUnits[unit]);
}

std::string format_bytes_up(double bytes) {
  const auto [value, unit] = in_unit(bytes);
  if (unit == 0) return fmt::format("{:.0f} B", std::ceil(value));
  return fmt::format("{:.1f} {}", std::ceil(value * 10.0) / 10.0, kUnits[unit]);
}

}  // namespace mpipe
