// Allocator model: the bytes the memory account (core/memory_account.h) counts for one tensor of
// a given size. The account counts each block's usable size (malloc_usable_size), which glibc's
// malloc rounds: a few bytes more for a block from the heap, up to a page more for a block it maps
// (at or above its mmap threshold). The memory model predicts in these bytes, so that a limit the
// planner says a stage fits is one the run's account stays within.
#pragma once

#include <limits>

namespace mpipe::plan {

struct AllocatorModel {
  // mpipe's setting at start-up (core/tensor.cpp, reuse_freed_tensor_memory): mapping is switched
  // off, so every block comes from the heap, however large.
  static constexpr double kNeverMapped = std::numeric_limits<double>::infinity();
  // glibc's largest mmap threshold: it ignores a larger MALLOC_MMAP_THRESHOLD_.
  static constexpr double kGlibcMaxMmapThreshold = 32.0 * 1024 * 1024;
  // glibc's own starting threshold, where mpipe leaves malloc alone (MALLOC_MMAP_MAX_,
  // MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ set, or a setting glibc refuses): it only
  // rises from there, so blocks from this size on may be mapped.
  static constexpr double kGlibcMmapThreshold = 128.0 * 1024;

  // A block whose request (tensor bytes rounded to 64, plus malloc's padding) reaches this is
  // mapped.
  double mmap_threshold = kNeverMapped;
  // False: a block is exactly its tensor's bytes (the model's own arithmetic, for tests).
  bool rounds = true;

  // What the account counts for a tensor of `bytes` (0 for none): core/tensor.cpp rounds the
  // request to 64 bytes and asks aligned_alloc(64) for it; a heap block's usable size is then at
  // most 40 bytes more, a mapped block's whole pages less malloc's 64-byte header and alignment.
  double block_bytes(double bytes) const;
  // The most block_bytes(b) - b over any b: a bound for blocks whose sizes the model knows only
  // in sum.
  static double max_overhead();
  // What the account counts for tensors of `bytes` in all, none smaller than `smallest`.
  double blocks_bytes(double bytes, double smallest) const;

  // The setting `mpipe train` runs under in this environment: nothing mapped with MALLOC_MMAP_MAX_
  // at 0, else MALLOC_MMAP_THRESHOLD_ as glibc reads it (at most 32 MiB; a larger value is
  // ignored), else with MALLOC_MMAP_MAX_ or MALLOC_TRIM_THRESHOLD_ set glibc's own, else mpipe's.
  // Under AddressSanitizer (no glibc malloc, nothing set) mpipe's: its blocks count exactly their
  // request, at most 40 bytes below what this model says.
  static AllocatorModel of_environment();
  static AllocatorModel exact() { return {.mmap_threshold = 0.0, .rounds = false}; }
};

}  // namespace mpipe::plan
