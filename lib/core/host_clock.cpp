// this_host, utc_now and this_pid from the C library and <chrono>.
#include "core/host_clock.h"

#include <fmt/chrono.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

namespace mpipe {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(now));
}

int this_pid() { return static_cast<int>(::getpid()); }

}  // namespace mpipe
