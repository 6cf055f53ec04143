// The recoveries of one supervised run directory: each recorded in metrics.jsonl at its relaunch,
// its seconds lost measured once the relaunched job logs a step past the failure, all of them
// added to summary.json when the run has finished.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "supervise/recovery.h"

namespace mpipe::supervise {

class RunRecoveries {
 public:
  using Clock = std::chrono::system_clock;

  explicit RunRecoveries(std::string run_dir) : run_dir_(std::move(run_dir)) {}

  const std::string& run_dir() const { return run_dir_; }
  bool empty() const { return recoveries_.empty(); }

  // Records `recovery` (the job failed at `failed_at`) in metrics.jsonl (a file that cannot be
  // written is warned about: the recovery is then in summary.json only). Call between the failed
  // job and the relaunch, when no rank writes the file.
  void add(Recovery recovery, Clock::time_point failed_at);

  // While the relaunched job runs: once it has logged a step past the last recovery's failure,
  // sets that recovery's seconds lost, from the last step logged before the failure.
  void watch();

  // Adds every recovery to summary.json (call once the run has written it). Throws Error naming
  // the file when it cannot be read or written.
  void add_to_summary() const;

 private:
  std::string run_dir_;
  std::vector<Recovery> recoveries_;
  // When the run last logged a step before the last recovery's failure.
  Clock::time_point last_progress_before_failure_;
};

}  // namespace mpipe::supervise
