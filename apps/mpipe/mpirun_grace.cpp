// mpirun's grace between SIGTERM and SIGKILL, from the environment it gives its ranks.
#include "mpirun_grace.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace mpipe::app {

std::optional<double> mpirun_kill_grace_s() {
  if (std::getenv("OMPI_MCA_orte_hnp_uri") == nullptr) return std::nullopt;
  const char* value = std::getenv("OMPI_MCA_odls_base_sigkill_timeout");
  if (value == nullptr) return 1.0;  // Open MPI 4.1's default
  const std::string_view text(value);
  int seconds = 0;  // an int MCA parameter
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end != text.data() + text.size() || seconds < 0) return std::nullopt;
  return static_cast<double>(seconds);
}

}  // namespace mpipe::app
