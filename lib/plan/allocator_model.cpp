// glibc malloc's usable sizes for aligned_alloc(64, n), as the memory account sees them.
#include "plan/allocator_model.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "core/tensor.h"

namespace mpipe::plan {
namespace {

constexpr double kAlignment = 64.0;  // core/tensor.cpp's
constexpr double kPage = 4096.0;
// A heap block's usable size beyond the request: 8 bytes of the next chunk's header, and up to
// 32 more when the rest of the chunk is too small to split off (measured: 8 or 40).
constexpr double kHeapOverhead = 40.0;
// aligned_alloc(64, n) asks malloc for a chunk of n + 8 rounded to 16, plus 64 + 32 to align
// within, plus 8: 128 bytes over n. Unless the heap's top can serve it, a chunk from the threshold
// on is mapped, in whole pages with its 8-byte size field; the usable size is the mapping less
// the 64 bytes in front of the aligned block (measured: 131072 bytes count 135104).
constexpr double kChunkPadding = 128.0;

double round_up(double value, double unit) { return std::ceil(value / unit) * unit; }

}  // namespace

double AllocatorModel::block_bytes(double bytes) const {
  if (bytes <= 0.0 || !rounds) return std::max(bytes, 0.0);
  const double request = round_up(bytes, kAlignment);
  if (request + kChunkPadding < mmap_threshold) return request + kHeapOverhead;
  // (Served from the heap's top instead, it counts less.)
  return round_up(request + kChunkPadding + 8.0, kPage) - kAlignment;
}

double AllocatorModel::max_overhead() {
  // A mapped block a byte past a page boundary, and up to 63 bytes of rounding to 64.
  return kPage + kChunkPadding + 8.0 + kAlignment - 1.0;
}

double AllocatorModel::blocks_bytes(double bytes, double smallest) const {
  if (bytes <= 0.0 || !rounds) return std::max(bytes, 0.0);
  const double blocks = smallest > 0.0 ? std::ceil(bytes / smallest) : 1.0;
  // At most this many of them are mapped (each at least the smallest mapped request), the rest
  // come from the heap.
  const double smallest_mapped =
      std::max({smallest, mmap_threshold - kChunkPadding - kAlignment, 1.0});
  const double mapped = std::min(blocks, std::floor(bytes / smallest_mapped));
  return bytes + mapped * max_overhead() + (blocks - mapped) * (kHeapOverhead + kAlignment - 1.0);
}

AllocatorModel AllocatorModel::of_environment() {
  if (kAddressSanitizer) return {};
  // glibc reads both numbers as strtoul does.
  const auto read = [](const char* value) -> std::optional<unsigned long> {
    char* end = nullptr;
    errno = 0;
    const unsigned long number = std::strtoul(value, &end, 10);
    if (end == value || errno != 0) return std::nullopt;
    return number;
  };
  const char* mmap_max = std::getenv("MALLOC_MMAP_MAX_");
  if (mmap_max && read(mmap_max) == 0UL) return {};
  if (const char* value = std::getenv("MALLOC_MMAP_THRESHOLD_")) {
    const std::optional<unsigned long> threshold = read(value);
    if (threshold && static_cast<double>(*threshold) <= kGlibcMaxMmapThreshold) {
      return {.mmap_threshold = static_cast<double>(*threshold)};
    }
    return {.mmap_threshold = kGlibcMmapThreshold};
  }
  if (mmap_max || std::getenv("MALLOC_TRIM_THRESHOLD_")) {
    return {.mmap_threshold = kGlibcMmapThreshold};
  }
  return {};
}

}  // namespace mpipe::plan
