// The recoveries and widenings of one supervised run directory: each recorded in metrics.jsonl at
// its relaunch, its seconds measured once the relaunched job logs a step past the last one before
// it, all of them added to summary.json when the run has finished.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "supervise/recovery.h"
#include "supervise/widening.h"

namespace mpipe::supervise {

class RunRecoveries {
 public:
  using Clock = std::chrono::system_clock;

  explicit RunRecoveries(std::string run_dir) : run_dir_(std::move(run_dir)) {}

  const std::string& run_dir() const { return run_dir_; }
  bool empty() const { return recoveries_.empty() && widenings_.empty(); }
  int widenings() const { return static_cast<int>(widenings_.size()); }

  // Records `recovery` (the job failed at `failed_at`) in metrics.jsonl (a file that cannot be
  // written is warned about: the recovery is then in summary.json only). Call between the failed
  // job and the relaunch, when no rank writes the file.
  void add(Recovery recovery, Clock::time_point failed_at);
  // Records `widening` (the supervisor sent its stop at `stopped_at`) the same way, between the
  // stopped job and its wider relaunch.
  void add(Widening widening, Clock::time_point stopped_at);

  // While the relaunched job runs: once it has logged a step past the last record's last step,
  // sets that record's seconds: a recovery's from the last step logged before the failure, a
  // widening's from the stop signal.
  void watch();

  // Adds every recovery and widening to summary.json (call once the run has written it). Throws
  // Error naming the file when it cannot be read or written.
  void add_to_summary() const;

 private:
  std::string run_dir_;
  std::vector<Recovery> recoveries_;
  std::vector<Widening> widenings_;
  // The record whose seconds watch() measures (that of the last relaunch), and since when.
  enum class Pending { kNone, kRecovery, kWidening } pending_ = Pending::kNone;
  Clock::time_point pending_since_;
};

}  // namespace mpipe::supervise
