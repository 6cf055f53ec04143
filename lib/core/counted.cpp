// Counts with a noun in the singular or plural.
#include "core/counted.h"

#include <fmt/format.h>

namespace mpipe {

std::string counted(int64_t count, std::string_view singular, std::string_view plural) {
  if (count == 1) return fmt::format("1 {}", singular);
  if (plural.empty()) return fmt::format("{} {}s", count, singular);
  return fmt::format("{} {}", count, plural);
}

}  // namespace mpipe
