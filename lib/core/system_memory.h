// Memory of this machine and process: what one process can use (physical memory, or the cgroup's
// limit if lower) and the process's peak resident set.
#pragma once

#include <cstdint>

namespace mpipe {

int64_t usable_memory_bytes();

// This process's peak resident set size so far (getrusage ru_maxrss).
int64_t peak_rss_bytes();

}  // namespace mpipe
