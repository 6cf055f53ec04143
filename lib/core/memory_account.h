// MemoryAccount: the live and high-water bytes of tensor storage, and the per-rank memory limit
// that stops an allocation which would pass it, naming what was running.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace mpipe {

// The exit code of a job that an allocation over pipeline.memory_limit ended.
inline constexpr int kMemoryLimitExitCode = 4;

// An allocation would take the tracked bytes past the limit. The message is one line, ready to
// log: "rank 1 (pipeline rank 1): memory limit exceeded in layer 7 (transformer_block) backward:
// asked 48.0 MiB with 980.2 MiB in use; pipeline.memory_limit is 1.00 GiB (exp.yaml:12)".
// Deliberately not an mpipe::Error: it happens on one rank in the middle of a step, while the
// other ranks wait for it in point-to-point receives, so no agreement can be reached; comm::agree
// lets it pass, and main logs it and ends the job with MPI_Abort(kMemoryLimitExitCode), the way
// it ends a job the watchdog stopped. Nothing else may swallow it (the daemon records it, then
// rethrows).
class MemoryLimitExceeded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What is running, for the limit's message: a layer ("layer 7 (transformer_block) backward") or
// a part of the run ("the optimizer step"). Points at strings that outlive it; costs nothing
// until an allocation fails.
struct MemoryActivity {
  std::string_view what;  // "forward", "backward", "recompute", "evaluation", or a part of the run
  int layer = -1;         // global layer index; -1 when not a layer
  std::string_view kind;  // the layer's kind

  // A part of the run outside the layers.
  static constexpr MemoryActivity part(std::string_view what) { return {what, -1, {}}; }
};

// "in layer 7 (transformer_block) backward", "in the optimizer step", "outside any layer".
std::string describe(const MemoryActivity* activity);

// Counts the bytes of tensor storage (every Tensor, so also parameters, gradients and optimizer
// state) as they are allocated and freed. Thread-safe and cheap: one relaxed atomic add per
// allocation, and a compare-and-swap only when the high-water mark rises.
class MemoryAccount {
 public:
  // The account Tensor storage reports to. Process-wide because an allocation happens deep in
  // layers and kernels that have no context to carry one, and RSS, which it stands for, is
  // per process too; tests make their own accounts, and reset or scope this one (reset_peak,
  // MemoryLimitScope).
  static MemoryAccount& process();

  MemoryAccount() = default;
  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;

  // Counts `bytes` more; throws MemoryLimitExceeded (counting nothing) when they would take the
  // live bytes past the limit.
  void allocate(size_t bytes);
  void release(size_t bytes) noexcept;

  int64_t live_bytes() const { return live_.load(std::memory_order_relaxed); }
  // The most live bytes since construction or the last reset_peak().
  int64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  void reset_peak() { peak_.store(live_bytes(), std::memory_order_relaxed); }
  // Leaves out of the high-water mark what was allocated since it was `earlier` (a peak_bytes()
  // read then) and is freed: the mark becomes `earlier` or the live bytes, whichever is more.
  void restore_peak(int64_t earlier);

  // A limit of `bytes` (0: none) for allocations from now on. `who`: "rank 1 (pipeline rank 1)";
  // `setting`: "pipeline.memory_limit is 1.00 GiB (exp.yaml:12)". Set while nothing allocates on
  // another thread.
  void set_limit(int64_t bytes, std::string who, std::string setting);
  int64_t limit_bytes() const { return limit_.load(std::memory_order_relaxed); }

  // What runs now (null: nothing named); see MemoryActivityScope.
  const MemoryActivity* activity() const { return activity_.load(std::memory_order_relaxed); }
  void set_activity(const MemoryActivity* activity) {
    activity_.store(activity, std::memory_order_relaxed);
  }

 private:
  [[noreturn]] void exceeded(size_t bytes, int64_t in_use) const;

  std::atomic<int64_t> live_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> limit_{0};
  std::atomic<const MemoryActivity*> activity_{nullptr};
  std::string who_, setting_;
};

// While it lives, `account` names `activity` as what runs (nested scopes restore the outer one).
class MemoryActivityScope {
 public:
  explicit MemoryActivityScope(const MemoryActivity& activity,
                               MemoryAccount& account = MemoryAccount::process())
      : account_(account), previous_(account.activity()) {
    account_.set_activity(&activity);
  }
  ~MemoryActivityScope() { account_.set_activity(previous_); }
  MemoryActivityScope(const MemoryActivityScope&) = delete;
  MemoryActivityScope& operator=(const MemoryActivityScope&) = delete;

 private:
  MemoryAccount& account_;
  const MemoryActivity* previous_;
};

// While it lives, `account` has this limit (see MemoryAccount::set_limit); then none again.
class MemoryLimitScope {
 public:
  MemoryLimitScope(int64_t bytes, std::string who, std::string setting,
                   MemoryAccount& account = MemoryAccount::process())
      : account_(account) {
    account_.set_limit(bytes, std::move(who), std::move(setting));
  }
  ~MemoryLimitScope() { account_.set_limit(0, {}, {}); }
  MemoryLimitScope(const MemoryLimitScope&) = delete;
  MemoryLimitScope& operator=(const MemoryLimitScope&) = delete;

 private:
  MemoryAccount& account_;
};

}  // namespace mpipe
