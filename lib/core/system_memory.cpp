// Reads physical memory (sysconf) and the cgroup v2 limit (/sys/fs/cgroup/memory.max).
#include "core/system_memory.h"

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

}  // namespace mpipe
