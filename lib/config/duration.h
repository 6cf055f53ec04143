// Reading durations: "300s", "5m", "1.5h", "250ms", "2d", or a plain number of seconds.
#pragma once

#include "config/field.h"

namespace mpipe::config {

// The longest duration accepted (30 days): longer deadlines mean none.
inline constexpr double kMaxDurationSeconds = 30 * 24 * 3600.0;

// The duration in seconds, > 0 and at most 30 days; fails "expected a duration such as 30s, 5m
// or 1h (units ms, s, m, h, d), got 'x'", "must be > 0, got 0s" or "must be at most 30d, got 31d".
double read_duration(const Field& field);

// `auto` (returned as 0) or a duration.
double read_duration_or_auto(const Field& field);

}  // namespace mpipe::config
