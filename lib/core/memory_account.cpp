// Tensor-bytes accounting: live bytes, the high-water mark, and the limit's one-line message.
#include "core/memory_account.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/byte_format.h"

namespace mpipe {

std::string describe(const MemoryActivity* activity) {
  if (!activity) return "outside any layer";
  if (activity->layer < 0) return fmt::format("in {}", activity->what);
  return fmt::format("in layer {} ({}) {}", activity->layer, activity->kind, activity->what);
}

MemoryAccount& MemoryAccount::process() {
  static MemoryAccount account;
  return account;
}

void MemoryAccount::allocate(size_t bytes) {
  const auto n = static_cast<int64_t>(bytes);
  const int64_t live = live_.fetch_add(n, std::memory_order_relaxed) + n;
  const int64_t limit = limit_.load(std::memory_order_relaxed);
  if (limit > 0 && live > limit) {
    live_.fetch_sub(n, std::memory_order_relaxed);
    exceeded(bytes, live - n);
  }
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (live > peak && !peak_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void MemoryAccount::restore_peak(int64_t earlier) {
  peak_.store(std::max(earlier, live_bytes()), std::memory_order_relaxed);
}

void MemoryAccount::release(size_t bytes) noexcept {
  live_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
}

void MemoryAccount::set_limit(int64_t bytes, std::string who, std::string setting) {
  who_ = std::move(who);
  setting_ = std::move(setting);
  limit_.store(bytes, std::memory_order_relaxed);
}

void MemoryAccount::exceeded(size_t bytes, int64_t in_use) const {
  throw MemoryLimitExceeded(fmt::format("{}: memory limit exceeded {}: asked {} with {} in use; {}",
                                        who_, describe(activity()),
                                        format_bytes(static_cast<double>(bytes)),
                                        format_bytes(static_cast<double>(in_use)), setting_));
}

}  // namespace mpipe
