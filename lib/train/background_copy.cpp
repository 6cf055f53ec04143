// A checkpoint's peer copies in a thread of their own, waits polled with a deadline (see
// background_copy.h).
#include "train/background_copy.h"

#include <chrono>

#include "core/error.h"

namespace mpipe::train {
namespace {

// The pause between two polls: a 4 MiB block takes milliseconds, and a poll that spun would take
// a core from the training that shares it.
constexpr std::chrono::microseconds kPollPause{200};

}  // namespace

BackgroundCopy::BackgroundCopy(Work work, double timeout_s) : timeout_s_(timeout_s) {
  thread_ = std::thread([this, work = std::move(work)] {
    try {
      work([this](comm::Request& request) { wait(request); });
    } catch (...) {
      failure_ = std::current_exception();
    }
    done_.store(true, std::memory_order_release);
  });
}

BackgroundCopy::~BackgroundCopy() {
  cancelled_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void BackgroundCopy::finish() {
  if (thread_.joinable()) thread_.join();
  if (failure_) std::rethrow_exception(failure_);
}

void BackgroundCopy::wait(comm::Request& request) const {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  while (!request.test()) {
    check(!cancelled_.load(std::memory_order_relaxed), "peer copy: cancelled (the job is ending)");
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    check(waited < timeout_s_,
          "peer copy: a transfer did not complete within {:.1f} s (the checkpoint's timeout): its "
          "peer does not answer",
          timeout_s_);
    std::this_thread::sleep_for(kPollPause);
  }
}

}  // namespace mpipe::train
