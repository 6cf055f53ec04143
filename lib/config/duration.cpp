// Durations in experiment files: a number with a unit (ms, s, m, h, d), or plain seconds.
#include "config/duration.h"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>

namespace mpipe::config {
namespace {

constexpr std::array<std::pair<std::string_view, double>, 5> kUnits = {{
    {"ms", 1e-3},
    {"s", 1.0},
    {"m", 60.0},
    {"h", 3600.0},
    {"d", 86400.0},
}};

// "5m" -> 300; nothing when the text is not a non-negative number with an optional unit.
std::optional<double> parse_seconds(std::string_view text) {
  double scale = 1.0;
  for (const auto& [unit, seconds] : kUnits) {  // "ms" is tried before "s" and "m"
    if (text.size() > unit.size() && text.ends_with(unit)) {
      text.remove_suffix(unit.size());
      scale = seconds;
      break;
    }
  }
  if (text.empty() ||
      !(std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '.')) {
    return std::nullopt;
  }
  double value = 0.0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value * scale;
}

}  // namespace

double read_duration(const Field& field) {
  const std::optional<double> seconds =
      field.node().IsScalar() ? parse_seconds(field.text()) : std::nullopt;
  if (!seconds) {
    field.fail("expected a duration such as 30s, 5m or 1h (units ms, s, m, h, d), got " +
               field.describe());
  }
  if (*seconds <= 0) field.fail("must be > 0, got " + field.text());
  if (*seconds > kMaxDurationSeconds) field.fail("must be at most 30d, got " + field.text());
  return *seconds;
}

double read_duration_or_auto(const Field& field) {
  if (field.node().IsScalar() && field.text() == "auto") return 0.0;
  return read_duration(field);
}

}  // namespace mpipe::config
