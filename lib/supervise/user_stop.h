// A user's stop signals to `mpipe supervise` (SIGTERM, SIGINT, SIGUSR1): counted by its signal
// handler, passed on to the running job by its loop once the job can take them.
#pragma once

#include <atomic>

namespace mpipe::supervise {

class UserStop {
 public:
  // From the signal handler: one more stop signal (async-signal-safe: a lock-free atomic).
  void received() { signals_.fetch_add(1); }

  // Whether a stop signal came: the job is not launched again.
  bool requested() const { return signals_.load() > 0; }
  // Whether one was passed on to the job (its end is then a stop, whatever its status).
  bool passed_on() const { return passed_on_ > 0; }
  // Whether the first one waits for the job to get under way (to_pass_on).
  bool held() const { return requested() && !passed_on(); }

  // The signal to send the job's mpirun or srun now, 0 for none; `under_way`: the job has logged
  // since its launch, so that every rank handles a stop signal. The first stop goes as SIGUSR1,
  // which mpirun and srun pass on to the ranks (they checkpoint at the next step boundary and
  // exit 0), once the job is under way: before, it would end a rank still in MPI_Init, with no
  // checkpoint. Each one after it goes as SIGTERM at once (the job ends without a checkpoint),
  // also while the first is held. The supervisor launches no job after a stop, so those passed on
  // are the running job's.
  int to_pass_on(bool under_way);

 private:
  static_assert(std::atomic<int>::is_always_lock_free);
  std::atomic<int> signals_{0};
  int passed_on_ = 0;  // signals_ when one was last passed on
};

}  // namespace mpipe::supervise
