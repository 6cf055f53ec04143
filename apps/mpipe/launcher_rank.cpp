// The launcher's rank of this process, from the variables each launcher sets.
#include "launcher_rank.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace mpipe::app {

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    const std::string_view text(value);
    int rank = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rank);
    if (error == std::errc() && end == text.data() + text.size() && rank >= 0) return rank;
  }
  return 0;
}

}  // namespace mpipe::app
