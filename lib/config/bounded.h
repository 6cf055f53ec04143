// Reading numbers that must lie in a range: "must be >= 1, got 0", "must be in [0, 1), got 1".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/field.h"

namespace mpipe::config {

struct Range {
  std::optional<double> min;
  bool min_open = false;  // min itself excluded
  std::optional<double> max;
  bool max_open = false;  // max itself excluded

  bool contains(double value) const;
  std::string describe() const;  // ">= 1", "> 0", "in [0, 1)", "<= 5"
};

Range at_least(double min);                   // [min, inf)
Range above(double min);                      // (min, inf)
Range half_open(double min, double max);      // [min, max)
Range open_interval(double min, double max);  // (min, max)
Range left_open(double min, double max);      // (min, max]

// The value, checked against `range` (failing "must be <range>, got <as written>").
int64_t read_int(const Field& field, const Range& range = {});
// Like read_int, and at most INT_MAX.
int read_int32(const Field& field, const Range& range = {});
double read_double(const Field& field, const Range& range = {});

}  // namespace mpipe::config
