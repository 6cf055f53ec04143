// Reading numbers that must lie in a range.
#include "config/bounded.h"

#include <fmt/format.h>

#include <limits>

namespace mpipe::config {

bool Range::contains(double value) const {
  if (min && !(min_open ? value > *min : value >= *min)) return false;
  if (max && !(max_open ? value < *max : value <= *max)) return false;
  return true;
}

std::string Range::describe() const {
  if (min && max) {
    return fmt::format("in {}{}, {}{}", min_open ? '(' : '[', *min, *max, max_open ? ')' : ']');
  }
  if (min) return fmt::format("{} {}", min_open ? ">" : ">=", *min);
  if (max) return fmt::format("{} {}", max_open ? "<" : "<=", *max);
  return "any number";
}

Range at_least(double min) {
  return {.min = min, .min_open = false, .max = std::nullopt, .max_open = false};
}
Range above(double min) {
  return {.min = min, .min_open = true, .max = std::nullopt, .max_open = false};
}
Range half_open(double min, double max) {
  return {.min = min, .min_open = false, .max = max, .max_open = true};
}
Range open_interval(double min, double max) {
  return {.min = min, .min_open = true, .max = max, .max_open = true};
}
Range left_open(double min, double max) {
  return {.min = min, .min_open = true, .max = max, .max_open = false};
}

namespace {

void check_range(const Field& field, double value, const Range& range) {
  if (!range.contains(value)) {
    field.fail(fmt::format("must be {}, got {}", range.describe(), field.text()));
  }
}

}  // namespace

int64_t read_int(const Field& field, const Range& range) {
  const int64_t value = field.as_int();
  check_range(field, static_cast<double>(value), range);
  return value;
}

int read_int32(const Field& field, const Range& range) {
  const int64_t value = read_int(field, range);
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (value > kMax) field.fail(fmt::format("must be <= {}, got {}", kMax, field.text()));
  if (value < -kMax) field.fail(fmt::format("must be >= {}, got {}", -kMax, field.text()));
  return static_cast<int>(value);
}

double read_double(const Field& field, const Range& range) {
  const double value = field.as_double();
  check_range(field, value, range);
  return value;
}

}  // namespace mpipe::config
