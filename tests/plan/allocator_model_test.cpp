// Tests for the allocator model: its block sizes against glibc's malloc_usable_size for
// core/tensor.cpp's aligned_alloc(64) requests, under mpipe's and a 64 KiB mmap threshold, and the
// setting it reads from the environment.
#include "plan/allocator_model.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace mpipe::plan {
namespace {

// What the memory account counts for a tensor of `bytes` (core/tensor.cpp's request).
double usable_size(size_t bytes) {
  const size_t request = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, request);
  const auto usable = static_cast<double>(malloc_usable_size(p));
  std::free(p);
  return usable;
}

const std::vector<size_t> kSizes = {4,      256,    1000,    4096,    65000,  65408,
                                    65472,  65536,  130944,  131072,  131136, 262144,
                                    524288, 700000, 1 << 20, 4 << 20, 5000000};

TEST(AllocatorModel, HeapBlocksCountAtMostFortyBytesOverTheRequest) {
  if (kAddressSanitizer) GTEST_SKIP() << "measures glibc's malloc, which AddressSanitizer replaces";
  reuse_freed_tensor_memory();  // mpipe's setting: no block is mapped
  const AllocatorModel allocator;
  std::vector<size_t> sizes = kSizes;
  sizes.push_back(size_t{40} << 20);  // above glibc's largest mmap threshold, 32 MiB
  for (size_t bytes : sizes) {
    const double usable = usable_size(bytes);
    EXPECT_GE(allocator.block_bytes(static_cast<double>(bytes)), usable) << bytes;
    EXPECT_LE(allocator.block_bytes(static_cast<double>(bytes)), usable + 32.0) << bytes;
  }
}

// Mapped blocks count whole pages: 135104 bytes for 128 KiB. In a fresh process (a death test
// re-runs the binary), whose heap has no free space that large, the blocks of 256 KiB and more
// are mapped and the model gives their size exactly; a block the heap can serve counts less, so
// the model is an upper bound.
bool mapped_blocks_match() {
  if (mallopt(M_MMAP_THRESHOLD, 64 * 1024) != 1) return false;
  const AllocatorModel allocator{.mmap_threshold = 64 * 1024};
  bool ok = allocator.block_bytes(131072.0) == 135104.0;
  for (size_t bytes : kSizes) {
    const double usable = usable_size(bytes);
    const double predicted = allocator.block_bytes(static_cast<double>(bytes));
    ok &= predicted >= usable && (bytes < 262144 || predicted == usable) &&
          predicted - static_cast<double>(bytes) <= AllocatorModel::max_overhead();
    if (!ok)
      std::fprintf(stderr, "%zu bytes: predicted %.0f, usable %.0f\n", bytes, predicted, usable);
  }
  return ok;
}

TEST(AllocatorModelDeathTest, MappedBlocksCountTheirPages) {
  if (kAddressSanitizer) GTEST_SKIP() << "measures glibc's malloc, which AddressSanitizer replaces";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(mapped_blocks_match() ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

TEST(AllocatorModel, BlocksKnownInSumCountTheMostEachCouldBeRounded) {
  const AllocatorModel allocator{.mmap_threshold = 64 * 1024};
  // Five blocks of at least 128 KiB: each may be mapped.
  EXPECT_EQ(allocator.blocks_bytes(5 * 131072.0, 131072.0),
            5 * 131072.0 + 5 * AllocatorModel::max_overhead());
  // Five of at least 16 KiB in 80 KiB: at most one of them is mapped.
  EXPECT_EQ(allocator.blocks_bytes(5 * 16384.0, 16384.0),
            5 * 16384.0 + AllocatorModel::max_overhead() + 4 * (40.0 + 63.0));
  EXPECT_EQ(AllocatorModel::exact().blocks_bytes(1000.0, 10.0), 1000.0);
  EXPECT_EQ(AllocatorModel::exact().block_bytes(1000.0), 1000.0);
  EXPECT_EQ(allocator.block_bytes(0.0), 0.0);
}

// Sets (or unsets) an environment variable while it lives.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~EnvVar() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// AddressSanitizer's blocks count exactly their request: mpipe's setting is an upper bound.
TEST(AllocatorModel, UnderAddressSanitizerIsMpipesSettingWhateverTheEnvironment) {
  if (!kAddressSanitizer) GTEST_SKIP() << "not an AddressSanitizer build (the asan preset)";
  const EnvVar mmap("MALLOC_MMAP_THRESHOLD_", "65536");
  EXPECT_EQ(AllocatorModel::of_environment().mmap_threshold, AllocatorModel::kNeverMapped);
  const AllocatorModel allocator = AllocatorModel::of_environment();
  for (size_t bytes : kSizes) {
    const double usable = usable_size(bytes);
    EXPECT_GE(allocator.block_bytes(static_cast<double>(bytes)), usable) << bytes;
    EXPECT_LE(allocator.block_bytes(static_cast<double>(bytes)), usable + 40.0) << bytes;
  }
}

TEST(AllocatorModel, ReadsTheSettingMpipeTrainRunsUnder) {
  if (kAddressSanitizer) GTEST_SKIP() << "measures glibc's malloc, which AddressSanitizer replaces";
  const EnvVar trim("MALLOC_TRIM_THRESHOLD_", nullptr);
  const EnvVar no_max("MALLOC_MMAP_MAX_", nullptr);
  {
    const EnvVar mmap("MALLOC_MMAP_THRESHOLD_", nullptr);
    EXPECT_EQ(AllocatorModel::of_environment().mmap_threshold, AllocatorModel::kNeverMapped);
  }
  {
    // Mapping switched off by the user: whatever the threshold, nothing is mapped.
    const EnvVar mmap("MALLOC_MMAP_THRESHOLD_", "65536");
    const EnvVar max("MALLOC_MMAP_MAX_", "0");
    EXPECT_EQ(AllocatorModel::of_environment().mmap_threshold, AllocatorModel::kNeverMapped);
  }
  {
    // A limit on the number of mapped blocks: mpipe leaves malloc alone, blocks may be mapped.
    const EnvVar mmap("MALLOC_MMAP_THRESHOLD_", nullptr);
    const EnvVar max("MALLOC_MMAP_MAX_", "8");
    EXPECT_EQ(AllocatorModel::of_environment().mmap_threshold, 128.0 * 1024);
  }
  {
    const EnvVar mmap("MALLOC_MMAP_THRESHOLD_", "65536");
    EXPECT_EQ(AllocatorModel::of_environment().mmap_threshold, 65536.0);
  }
  {
    // Above glibc's maximum: glibc ignores it and keeps its own (mpipe leaves malloc alone).
    const EnvVar mmap("MALLOC_MMAP_THRESHOLD_", "99999999999");
    EXPECT_EQ(AllocatorModel::of_environment().mmap_threshold, 128.0 * 1024);
  }
  {
    const EnvVar mmap("MALLOC_MMAP_THRESHOLD_", nullptr);
    const EnvVar trim_set("MALLOC_TRIM_THRESHOLD_", "1000000");
    EXPECT_EQ(AllocatorModel::of_environment().mmap_threshold, 128.0 * 1024);
  }
}

}  // namespace
}  // namespace mpipe::plan
