// ProgressThread: a thread that drives Open MPI's progress engine while the main thread computes,
// so that posted transfers move without waiting for the main thread's next MPI call.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace mpipe::comm {

// Open MPI 4.1 has no asynchronous progress: a message above the eager limit (TCP, or shared
// memory without single-copy) or a nonblocking collective moves only while some thread of its
// sender calls into MPI. This thread calls MPI_Iprobe on a private duplicate of MPI_COMM_SELF in
// a loop, which runs Open MPI's progress engine (opal_progress) and so moves every pending
// transfer of the process, without owning, testing or completing any of mpipe's requests: the
// main thread still does every wait and test (under the watchdog's deadlines). It helps only
// where the rank has a spare core; on a core shared with compute it can only cost.
//
// Needs MPI_THREAD_MULTIPLE (comm::thread_level()). The destructor stops and joins the thread;
// it must run before MPI_Finalize (an RAII scope inside comm::Environment's lifetime).
class ProgressThread {
 public:
  // The pause between two calls into MPI. The transfers to hide take place behind milliseconds of
  // compute, so a call every 100 us moves them in good time; shorter pauses mostly add cost where
  // the thread shares a core (K=2 M=8 of configs/scaling_mlp.yaml with each rank bound to one core
  // of a 2-core machine: 0.72x the throughput without the thread at 100 us, 0.32x at 20 us, 0.47x
  // spinning, 0.90x at 500 us).
  static constexpr std::chrono::microseconds kDefaultPause{100};

  // Starts the thread (pause 0: it spins). Throws mpipe::Error unless MPI provides
  // MPI_THREAD_MULTIPLE.
  explicit ProgressThread(std::chrono::microseconds pause = kDefaultPause);
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Stops and joins the thread (idempotent); throws mpipe::Error if an MPI call of the thread
  // failed (the thread then stopped at that call).
  void stop();
  // Calls into MPI so far (for tests and benchmarks).
  long num_polls() const { return polls_.load(std::memory_order_relaxed); }

  struct Private;  // internal to lib/comm: the duplicated communicator

 private:
  void loop();

  std::chrono::microseconds pause_;
  std::unique_ptr<Private> private_;
  std::atomic<bool> stop_{false};
  std::atomic<long> polls_{0};
  std::string error_;  // written by the thread before it ends, read after join
  std::thread thread_;
};

}  // namespace mpipe::comm
