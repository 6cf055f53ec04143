// MemoryAccount: live bytes, the high-water mark, the limit and its one-line message.
#include "core/memory_account.h"

#include <gtest/gtest.h>

#include <string>

#include "core/tensor.h"

namespace mpipe {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(MemoryAccount, CountsLiveBytesAndTheirHighWaterMarkUntilReset) {
  MemoryAccount account;
  account.allocate(100);
  account.allocate(50);
  account.release(100);
  EXPECT_EQ(account.live_bytes(), 50);
  EXPECT_EQ(account.peak_bytes(), 150);
  account.reset_peak();
  EXPECT_EQ(account.peak_bytes(), 50);
  account.allocate(10);
  EXPECT_EQ(account.peak_bytes(), 60);
}

TEST(MemoryAccount, RestoringThePeakForgetsWhatWasAllocatedAndFreedSince) {
  MemoryAccount account;
  account.allocate(100);
  account.release(60);
  const int64_t earlier = account.peak_bytes();
  account.allocate(500);
  account.release(500);
  account.restore_peak(earlier);
  EXPECT_EQ(account.peak_bytes(), 100);
  account.allocate(200);  // still held: above the earlier mark, so the mark is the live bytes
  account.restore_peak(earlier);
  EXPECT_EQ(account.peak_bytes(), 240);
}

TEST(MemoryAccount, AllocationOverTheLimitThrowsTheOneLineMessageAndCountsNothing) {
  MemoryAccount account;
  account.set_limit(int64_t{1} << 30, "rank 1 (pipeline rank 1)",
                    "pipeline.memory_limit is 1.00 GiB (configs/x.yaml:12)");
  account.allocate(980 * kMiB + kMiB / 5);
  const MemoryActivity activity{.what = "backward", .layer = 7, .kind = "transformer_block"};
  const MemoryActivityScope label(activity, account);
  try {
    account.allocate(48 * kMiB);
    FAIL() << "no MemoryLimitExceeded";
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "rank 1 (pipeline rank 1): memory limit exceeded in layer 7 (transformer_block) backward: "
        "asked 48.0 MiB with 980.2 MiB in use; pipeline.memory_limit is 1.00 GiB "
        "(configs/x.yaml:12)");
  }
  EXPECT_EQ(account.live_bytes(), static_cast<int64_t>(980 * kMiB + kMiB / 5));
  EXPECT_EQ(account.peak_bytes(), static_cast<int64_t>(980 * kMiB + kMiB / 5));
  account.allocate(40 * kMiB);  // up to the limit is allowed
}

TEST(MemoryAccount, MessageNamesThePartOfTheRunOutsideTheLayers) {
  MemoryAccount account;
  account.set_limit(1000, "rank 0 (pipeline rank 0)", "pipeline.memory_limit is 1000 B (x.yaml:3)");
  try {
    account.allocate(2000);
    FAIL() << "no MemoryLimitExceeded";
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "rank 0 (pipeline rank 0): memory limit exceeded outside any layer: asked 2.0 KiB with 0 B "
        "in use; pipeline.memory_limit is 1000 B (x.yaml:3)");
  }
  const MemoryActivity step = MemoryActivity::part("step 3 (outside the layers)");
  const MemoryActivityScope outer(step, account);
  {
    const MemoryActivity layer{.what = "forward", .layer = 0, .kind = "linear"};
    const MemoryActivityScope inner(layer, account);
    EXPECT_EQ(describe(account.activity()), "in layer 0 (linear) forward");
  }
  EXPECT_EQ(describe(account.activity()), "in step 3 (outside the layers)");
}

TEST(MemoryAccount, NoLimitOnceTheScopeEnds) {
  MemoryAccount account;
  {
    const MemoryLimitScope limit(100, "rank 0 (pipeline rank 0)", "limit", account);
    EXPECT_THROW(account.allocate(200), MemoryLimitExceeded);
  }
  account.allocate(200);
  EXPECT_EQ(account.live_bytes(), 200);
}

TEST(MemoryAccount, TensorStorageIsCountedUntilFreedAndStopsAtTheLimit) {
  MemoryAccount& process = MemoryAccount::process();
  const int64_t before = process.live_bytes();
  {
    Tensor t(Shape({1024, 256}));  // 1 MiB
    EXPECT_GE(process.live_bytes() - before, static_cast<int64_t>(kMiB));
    EXPECT_LT(process.live_bytes() - before, static_cast<int64_t>(kMiB + 8192));
    Tensor copy = t;
    EXPECT_GE(process.live_bytes() - before, static_cast<int64_t>(2 * kMiB));
  }
  EXPECT_EQ(process.live_bytes(), before);
  process.reset_peak();
  const MemoryLimitScope limit(before + static_cast<int64_t>(kMiB), "rank 0 (pipeline rank 0)",
                               "limit");
  EXPECT_THROW(Tensor(Shape({2 * 1024, 256})), MemoryLimitExceeded);
  EXPECT_EQ(process.live_bytes(), before);
  EXPECT_EQ(process.peak_bytes(), before);
}

}  // namespace
}  // namespace mpipe
