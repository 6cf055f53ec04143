// app::InitDeadline: a timer that ends a process still inside MPI_Init after comm.startup_timeout.
#include "init_deadline.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "comm/watchdog.h"
#include "log/logging.h"

namespace mpipe::app {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTick = std::chrono::milliseconds(100);  // the timer's resolution
// A gap this long between two ticks means this process was stopped (as in the watchdog's waits).
constexpr double kSuspendedSeconds = 1.0;

// The first of these environment variables that the launcher set, as a number; -1 when none is.
int launcher_number(std::initializer_list<const char*> variables) {
  for (const char* name : variables) {
    if (const char* value = std::getenv(name); value && *value) return std::atoi(value);
  }
  return -1;
}

// Logs the line and ends the process (MPI cannot end the job: it is not up).
[[noreturn]] void end_process(double waited_s) {
  // Open MPI's, PMIx's, MPICH's and Slurm's names for the rank and the job's size.
  const int rank =
      launcher_number({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"});
  const int size = launcher_number({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  std::array<char, 256> host{};
  gethostname(host.data(), host.size() - 1);
  log::setup_logging(std::max(rank, 0), std::max(size, 1), "info");
  spdlog::error(
      "watchdog: start-up: rank {} (host {}) waited {:.1f} s in MPI_Init for the other ranks of "
      "the job, which have not all started (a rank stopped, or never started by its launcher); "
      "ending the job",
      rank >= 0 ? std::to_string(rank) : "?", host.data(), waited_s);
  spdlog::default_logger()->flush();
  std::_Exit(comm::kWatchdogExitCode);
}

}  // namespace

InitDeadline::InitDeadline(double seconds) {
  thread_ = std::thread([this, seconds] {
    std::unique_lock lock(mutex_);
    double waited_s = 0.0;
    auto last = Clock::now();
    while (!disarmed_.wait_for(lock, kTick, [this] { return done_; })) {
      const auto now = Clock::now();
      const double gap_s = std::chrono::duration<double>(now - last).count();
      last = now;
      if (gap_s < kSuspendedSeconds) waited_s += gap_s;
      if (waited_s >= seconds) end_process(waited_s);
    }
  });
}

InitDeadline::~InitDeadline() {
  {
    const std::lock_guard lock(mutex_);
    done_ = true;
  }
  disarmed_.notify_one();
  thread_.join();
}

}  // namespace mpipe::app
