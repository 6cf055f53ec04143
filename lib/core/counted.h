// Counts for people: "1 stage", "2 stages", "1 micro-batch", "8 micro-batches".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mpipe {

// `count` and its noun: `singular` for 1, else `plural` (by default `singular` + "s").
std::string counted(int64_t count, std::string_view singular, std::string_view plural = {});

}  // namespace mpipe
