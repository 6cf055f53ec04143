// The memory one process can use on this machine: physical memory, or the cgroup's limit if lower.
#pragma once

#include <cstdint>

namespace mpipe {

int64_t usable_memory_bytes();

}  // namespace mpipe
