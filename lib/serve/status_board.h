// StatusBoard: the daemon's rank 0 keeps every experiment's state here and writes it to the
// spool's status.json on each change (progress at most every `min_interval_s`).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "log/progress.h"
#include "serve/spool.h"
#include "serve/status_file.h"

namespace mpipe::serve {

// What an experiment ended with (RunResult's numbers for a finished one).
struct Ending {
  ExperimentState state = ExperimentState::kDone;
  // Steps done. Not read for kFailed: a failure (seen at any step) keeps the step of its last
  // progress record, which status shows.
  int64_t step = 0;
  std::optional<double> loss = {};
  std::optional<double> eval_loss = {};
  std::optional<double> eval_accuracy = {};
  std::string error = {};  // kFailed
};

class StatusBoard {
 public:
  // Reads status.json; an experiment it says is running belonged to a daemon that died without
  // stopping it, so it becomes interrupted. A damaged status.json is moved to quarantine/ with a
  // warning, and a new one started. Records this daemon as serving and writes the file.
  StatusBoard(const Spool& spool, int ranks, double min_interval_s = 0.5);

  // Picks up new queue entries and cancel requests; writes when something changed.
  void refresh();
  void started(const QueueEntry& entry);
  // The running experiment's layout, once its preflight has planned it for the world.
  void planned(const std::string& name, int stages, int replicas, int micro_batches);
  // A damaged entry moved to quarantine/: recorded as failed with its error.
  void quarantined(const QuarantinedEntry& entry);
  // A logged step of the running experiment. Errors are logged, not thrown: training goes on.
  void progress(const std::string& name, const log::ProgressRecord& record,
                std::optional<double> eta_s);
  void ended(const std::string& name, const Ending& ending);
  // The experiment `name` ended the whole job (see apply_failure_note): rank 0 records this just
  // before the job ends when it is the failing rank, and the next daemon from the failing rank's
  // note, with `resuming` set: a resume after a lost peer is then counted; `supervised`: see
  // apply_failure_note. Returns the state it now has (interrupted: the daemon resumes it; failed).
  ExperimentState job_failed(const std::string& name, const FailureNote& note, bool resuming,
                             bool supervised = false);
  // The daemon stops: `reason` is "signal" or "idle".
  void stopped(const std::string& reason);

  const SpoolStatus& status() const { return status_; }

 private:
  void write();

  const Spool& spool_;
  SpoolStatus status_;
  double min_interval_s_;
  std::chrono::steady_clock::time_point last_write_;
  bool warned_ = false;
};

}  // namespace mpipe::serve
