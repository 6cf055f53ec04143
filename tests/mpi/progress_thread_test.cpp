// Multi-rank test of comm::ProgressThread (2 ranks, on a transport where a large message moves
// only while its sender calls into MPI: shared memory without single-copy, or TCP): with the
// thread, a message that rank 0 posted arrives while rank 0 computes without calling MPI; without
// it, only after the compute.
#include "comm/progress_thread.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::comm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kComputeS = 0.2;
constexpr size_t kFloats = size_t{1} << 20;  // 4 MB: far above every eager limit

// Busy arithmetic for `seconds` of wall time, without any MPI call.
double compute_for(double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  double x = 1.0;
  while (Clock::now() < end) {
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  }
  return x;
}

// Rank 0 posts a send of kFloats floats to rank 1, then computes for kComputeS, then waits for
// the send; rank 1 waits for the message. Returns (on every rank) the seconds from the common
// start (a barrier) until the message had arrived on rank 1.
double arrival_seconds(const Communicator& world, bool progress_thread) {
  std::vector<float> data(kFloats, 1.0f);
  std::optional<ProgressThread> thread;
  if (progress_thread && world.rank() == 0) thread.emplace();
  Request receive;
  if (world.rank() == 1) receive = world.irecv(data, 0, 7);
  world.barrier();
  const auto start = Clock::now();
  std::vector<double> arrival{0.0};
  if (world.rank() == 0) {
    Request send = world.isend(data, 1, 7);
    volatile double sink = compute_for(kComputeS);
    static_cast<void>(sink);
    send.wait();
  } else {
    receive.wait();
    arrival[0] = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_EQ(data[kFloats - 1], 1.0f);
  }
  if (thread) {
    EXPECT_GT(thread->num_polls(), 0);
    thread->stop();
  }
  world.broadcast(arrival, 1);
  return arrival[0];
}

TEST(ProgressThread, MovesALargeSendWhileItsSenderComputes) {
  const Communicator world = Communicator::world();
  ASSERT_EQ(world.size(), 2);
  ASSERT_EQ(thread_level(), ThreadLevel::kMultiple);
  const double arrival = arrival_seconds(world, true);
  EXPECT_LT(arrival, 0.5 * kComputeS) << "the message arrived after " << arrival << " s";
}

// The control: the setup needs the sender's progress, so without the thread the message waits
// for the end of the compute (the first test would pass without a working thread otherwise).
TEST(ProgressThread, WithoutItALargeSendWaitsForItsSendersNextMpiCall) {
  const Communicator world = Communicator::world();
  ASSERT_EQ(world.size(), 2);
  const double arrival = arrival_seconds(world, false);
  EXPECT_GT(arrival, 0.75 * kComputeS) << "the message arrived after " << arrival << " s";
}

TEST(ProgressThread, StopsOnceAndIsJoinedByItsDestructor) {
  ProgressThread thread(std::chrono::microseconds(0));
  while (thread.num_polls() < 10) {
  }
  thread.stop();
  const long polls = thread.num_polls();
  thread.stop();
  EXPECT_EQ(thread.num_polls(), polls);
}

}  // namespace
}  // namespace mpipe::comm
