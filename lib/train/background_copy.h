// BackgroundCopy: a checkpoint's peer copies made in a thread of their own while training goes on.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <string>
#include <thread>

#include "train/file_transfer.h"

namespace mpipe::train {

// Runs `work` once in a new thread, handing it the wait its transfers use (TransferWait): it polls
// the request (MPI_Test, which also drives MPI's progress) with short sleeps, and throws
// mpipe::Error when the request has not completed `timeout_s` after the wait began ("peer copy:
// waited 30 s for a copy of stage_1.safetensors ...", bounded as the watchdog bounds the main
// thread's waits) or when the copy is cancelled. The thread's MPI calls must use a communicator no
// other thread uses, without a watchdog (the watchdog's state belongs to the main thread); MPI must
// provide MPI_THREAD_MULTIPLE.
class BackgroundCopy {
 public:
  using Work = std::function<void(const TransferWait& wait)>;
  BackgroundCopy(Work work, double timeout_s);
  // Cancels the copy if it is still running (its next poll throws) and joins the thread: the job
  // is ending (another failure, the watchdog), and no rank waits for this one's copies.
  ~BackgroundCopy();
  BackgroundCopy(const BackgroundCopy&) = delete;
  BackgroundCopy& operator=(const BackgroundCopy&) = delete;

  // True once `work` has returned or thrown (not collective: ranks agree on it).
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Joins the thread; rethrows what `work` threw. Call once.
  void finish();

 private:
  void wait(comm::Request& request) const;

  double timeout_s_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};
  std::exception_ptr failure_;  // written by the thread before done_, read after the join
  std::thread thread_;
};

}  // namespace mpipe::train
