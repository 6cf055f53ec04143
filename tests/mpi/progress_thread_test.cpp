// Multi-rank test of comm::ProgressThread (2 ranks, on a transport where a large message moves
// only while its sender calls into MPI: shared memory without single-copy, or TCP): with the
// thread, a message that rank 0 posted arrives while rank 0 computes without calling MPI; without
// it, not before rank 0's next MPI call. Rank 1 says that the message arrived through a file
// beside MPI, which rank 0 watches while it computes; so no bound here depends on how fast a
// loaded machine runs the ranks.
#include "comm/progress_thread.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::comm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kFloats = size_t{1} << 20;  // 4 MB: far above every eager limit

// The file by which rank 1 says that the message arrived: rank 0's name, the same on both ranks.
std::filesystem::path arrival_flag(const Communicator& world) {
  std::string name = (std::filesystem::temp_directory_path() /
                      ("mpipe_progress_thread_test." + std::to_string(getpid())))
                         .string();
  world.broadcast(name, 0);
  return name;
}

// Busy arithmetic without any MPI call until `flag` exists or `seconds` of wall time have
// passed. Returns whether the flag appeared.
bool compute_until(const std::filesystem::path& flag, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  volatile double x = 1.0;
  while (Clock::now() < end) {
    for (int i = 0; i < 100000; ++i) x = x * 1.0000001 + 1e-9;
    if (std::filesystem::exists(flag)) return true;
  }
  return false;
}

// Rank 0 posts a send of kFloats floats to rank 1, then computes, watching for the arrival flag,
// for at most `compute_s`, then waits for the send; rank 1 waits for the message and creates the
// flag. Returns (on every rank) whether rank 0 saw the flag before it called MPI again.
bool arrived_during_compute(const Communicator& world, bool progress_thread, double compute_s) {
  const std::filesystem::path flag = arrival_flag(world);
  std::vector<float> data(kFloats, 1.0f);
  std::optional<ProgressThread> thread;
  if (progress_thread && world.rank() == 0) thread.emplace();
  Request receive;
  if (world.rank() == 1) receive = world.irecv(data, 0, 7);
  world.barrier();
  std::vector<double> seen{0.0};
  if (world.rank() == 0) {
    Request send = world.isend(data, 1, 7);
    seen[0] = compute_until(flag, compute_s) ? 1.0 : 0.0;
    send.wait();
  } else {
    receive.wait();
    std::ofstream(flag).put('1');
    EXPECT_EQ(data[kFloats - 1], 1.0f);
  }
  if (thread) {
    EXPECT_GT(thread->num_polls(), 0);
    thread->stop();
  }
  world.barrier();  // (rank 1 created the flag)
  if (world.rank() == 0) std::filesystem::remove(flag);
  world.broadcast(seen, 0);
  return seen[0] == 1.0;
}

// Far above the time the thread takes to move 4 MB on the most loaded machine: the compute ends
// as soon as the message has arrived.
constexpr double kLongestComputeS = 60.0;

TEST(ProgressThread, MovesALargeSendWhileItsSenderComputes) {
  const Communicator world = Communicator::world();
  ASSERT_EQ(world.size(), 2);
  ASSERT_EQ(thread_level(), ThreadLevel::kMultiple);
  EXPECT_TRUE(arrived_during_compute(world, true, kLongestComputeS))
      << "the message had not arrived after " << kLongestComputeS << " s of compute";
}

// The control: the setup needs the sender's progress, so without the thread the message waits
// for the sender's next MPI call (the first test would pass without a working thread otherwise).
TEST(ProgressThread, WithoutItALargeSendWaitsForItsSendersNextMpiCall) {
  const Communicator world = Communicator::world();
  ASSERT_EQ(world.size(), 2);
  EXPECT_FALSE(arrived_during_compute(world, false, 0.5))
      << "the message arrived while its sender computed";
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
