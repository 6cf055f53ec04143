// The launcher's rank of this process and its job's size, from the variables each launcher sets.
#include "launcher_rank.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace mpipe::app {

namespace {

// The first of the variables `names` that holds a number of at least `least`; nullopt if none.
std::optional<int> first_number(std::initializer_list<const char*> names, int least) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    const std::string_view text(value);
    int number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error == std::errc() && end == text.data() + text.size() && number >= least) return number;
  }
  return std::nullopt;
}

}  // namespace

int launcher_rank() {
  return first_number({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}, 0)
      .value_or(0);
}

int launcher_size() {
  return first_number({"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, 1)
      .value_or(1);
}

}  // namespace mpipe::app
