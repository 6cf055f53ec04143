// Shared by the benchmark programs: timing of a repeated call and the thread count in use.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

namespace mpipe::bench {

// Seconds per call: warm up twice, then repeat until at least `min_seconds` have passed and
// at least 3 calls were timed.
inline double seconds_per_call(const std::function<void()>& call, double min_seconds) {
  call();
  call();
  using Clock = std::chrono::steady_clock;
  int calls = 0;
  const auto start = Clock::now();
  double elapsed = 0.0;
  do {
    call();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < min_seconds || calls < 3);
  return elapsed / calls;
}

// oneDNN runs on OpenMP: its thread count is OMP_NUM_THREADS, else one per hardware thread.
inline std::string thread_count() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env && *env) return env;
  return fmt::format("{} (OMP_NUM_THREADS unset)", std::thread::hardware_concurrency());
}

}  // namespace mpipe::bench
