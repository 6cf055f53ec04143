// The start-up deadline before MPI exists: MPI_Init waits for every rank of the job, so a rank
// that never reaches it (stopped, or never started by its launcher) would hold the others forever.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

namespace mpipe::app {

// While it lives, a thread ends the process once `seconds` have passed (time this process itself
// was stopped not counted): it logs one line naming this rank, as the launcher numbered it, and
// its host, and exits with the watchdog's exit code 3. Destroy it once MPI_Init has returned: from
// then on the watchdog bounds every wait.
class InitDeadline {
 public:
  explicit InitDeadline(double seconds);
  ~InitDeadline();
  InitDeadline(const InitDeadline&) = delete;
  InitDeadline& operator=(const InitDeadline&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable disarmed_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace mpipe::app
