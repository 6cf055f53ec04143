// Reads physical memory (sysconf), the cgroup v2 limit (/sys/fs/cgroup/memory.max) and getrusage.
#include "core/system_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace mpipe {

int64_t usable_memory_bytes() {
  int64_t bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  std::ifstream limit_file("/sys/fs/cgroup/memory.max");
  std::string limit;
  if (limit_file >> limit && limit != "max") {
    try {
      bytes = std::min<int64_t>(bytes, std::stoll(limit));
    } catch (const std::exception&) {  // unreadable: keep the physical size
    }
  }
  return bytes;
}

int64_t peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace mpipe
