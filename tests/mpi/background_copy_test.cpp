// Multi-rank tests of train::BackgroundCopy (run with 4 ranks): files sent in copy threads on a
// communicator of their own stay pending across "steps" (collectives of the main threads) and are
// agreed done at a later step boundary, whole; a wait no peer answers fails after its deadline;
// destroying a copy whose peer never sends cancels it.
#include "train/background_copy.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "support/temp_dir.h"
#include "support/test_files.h"

namespace mpipe::train {
namespace {

using comm::Communicator;

constexpr int kTag = 7;
constexpr double kNoDeadline = 1e9;

// Rank r's file: 6 MiB + r bytes (two blocks), from a seed.
std::string file_of(int rank) {
  return testing::pseudo_random_bytes((size_t{6} << 20) + static_cast<size_t>(rank),
                                      static_cast<uint32_t>(rank));
}

// The copy comm of a run: a split of the world without a watchdog.
Communicator copy_comm(const Communicator& world) {
  Communicator copies = world.split(0, world.rank(), "the peer copies");
  copies.set_watchdog(nullptr);
  return copies;
}

TEST(BackgroundCopy, CopiesPendingAcrossStepsAreAgreedDoneAtALaterBoundary) {
  ASSERT_EQ(comm::thread_level(), comm::ThreadLevel::kMultiple);
  const Communicator world = Communicator::world();
  const Communicator copies = copy_comm(world);
  const int rank = world.rank(), size = world.size();
  testing::TempDir dir;
  std::ofstream(dir.file("mine"), std::ios::binary) << file_of(rank);
  // Rank 0 starts sending only once its main thread has passed kHeld step boundaries, so every
  // rank's copies (a ring, in one order: 0 to 1 first) are still pending at each of them.
  constexpr int kHeld = 3;
  std::atomic<int> boundaries{0};
  BackgroundCopy copy(
      [&](const TransferWait& wait) {
        while (rank == 0 && boundaries.load() < kHeld) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        for (int from = 0; from < size; ++from) {
          const int to = (from + 1) % size;
          if (rank == from) send_file(copies, dir.file("mine"), to, kTag, wait);
          if (rank == to) receive_file(copies, dir.file("got"), from, kTag, wait);
        }
      },
      kNoDeadline);
  int agreed_at = -1;
  for (int boundary = 0; agreed_at < 0; ++boundary) {
    std::vector<float> step(1024, 1.0f);  // the step's own collective, beside the copies
    world.allreduce_sum(step);
    ASSERT_EQ(step[0], static_cast<float>(size));
    if (world.all_true(copy.done())) agreed_at = boundary;
    boundaries.store(boundary + 1);
  }
  EXPECT_GE(agreed_at, kHeld);
  copy.finish();
  EXPECT_EQ(testing::file_contents(dir.file("got")), file_of((rank + size - 1) % size));
}

TEST(BackgroundCopy, AWaitNoPeerAnswersFailsAfterItsDeadline) {
  const Communicator world = Communicator::world();
  const Communicator copies = copy_comm(world);
  testing::TempDir dir;
  if (world.rank() == 1) {  // rank 0 never sends
    BackgroundCopy copy(
        [&](const TransferWait& wait) { receive_file(copies, dir.file("got"), 0, kTag, wait); },
        0.2);
    try {
      copy.finish();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "peer copy: a transfer did not complete within 0.2 s (the checkpoint's timeout): "
                "its peer does not answer");
    }
    EXPECT_TRUE(copy.done());
  }
  world.barrier();
}

TEST(BackgroundCopy, DestroyingACopyWhosePeerNeverSendsCancelsIt) {
  const Communicator world = Communicator::world();
  const Communicator copies = copy_comm(world);
  testing::TempDir dir;
  if (world.rank() == 2) {  // rank 3 never sends; no deadline
    std::string failure;
    {
      BackgroundCopy copy(
          [&](const TransferWait& wait) {
            try {
              receive_file(copies, dir.file("got"), 3, kTag, wait);
            } catch (const Error& e) {
              failure = e.what();
              throw;
            }
          },
          kNoDeadline);
      EXPECT_FALSE(copy.done());
    }  // joins: returns only once the thread has given up
    EXPECT_EQ(failure, "peer copy: cancelled (the job is ending)");
  }
  world.barrier();
}

}  // namespace
}  // namespace mpipe::train
