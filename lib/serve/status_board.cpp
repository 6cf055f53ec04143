// StatusBoard: state changes of the daemon's experiments, written through to status.json.
#include "serve/status_board.h"

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/host_clock.h"

namespace mpipe::serve {
namespace {

// The spool's status.json, or an empty status when it is damaged (moved to quarantine/).
SpoolStatus read_or_quarantine(const Spool& spool) {
  try {
    return read_status_file(spool.status_path());
  } catch (const InputError& e) {
    const std::string moved = spool.quarantine(spool.status_path());
    spdlog::warn("{}; moved to {}: starting a new one (the runs are in {}/runs)", e.what(), moved,
                 spool.dir());
    return {};
  }
}

}  // namespace

StatusBoard::StatusBoard(const Spool& spool, int ranks, double min_interval_s)
    : spool_(spool), status_(read_or_quarantine(spool)), min_interval_s_(min_interval_s) {
  for (ExperimentStatus& e : status_.experiments) {
    if (e.state == ExperimentState::kRunning) {
      e.state = ExperimentState::kInterrupted;
      e.eta_s.reset();
    }
  }
  const std::string now = utc_now();
  status_.daemon = DaemonStatus{.state = "serving",
                                .reason = "",
                                .pid = this_pid(),
                                .host = this_host(),
                                .ranks = ranks,
                                .since = now,
                                .updated = now};
  merge_spool(status_, spool_);
  write();
}

void StatusBoard::refresh() {
  const nlohmann::json before = to_json(status_);
  merge_spool(status_, spool_);
  if (to_json(status_) != before) write();
}

void StatusBoard::started(const QueueEntry& entry) {
  ExperimentStatus& e = status_.upsert(entry.name, entry.seq);
  e.state = ExperimentState::kRunning;
  e.config = entry.config;
  e.steps = entry.steps;
  e.submitted = entry.submitted;
  e.run_dir = spool_.run_dir(entry.name);
  e.started = utc_now();
  e.stages = e.replicas = e.micro_batches = 0;  // planned again for this world
  e.eta_s.reset();
  e.error.clear();
  write();
}

void StatusBoard::planned(const std::string& name, int stages, int replicas, int micro_batches) {
  ExperimentStatus* e = status_.find(name);
  if (!e) return;
  e->stages = stages;
  e->replicas = replicas;
  e->micro_batches = micro_batches;
  write();
}

void StatusBoard::quarantined(const QuarantinedEntry& entry) {
  ExperimentStatus& e = status_.upsert(entry.name, entry.seq);
  e.state = ExperimentState::kFailed;
  e.error = entry.error;
  e.ended = utc_now();
  write();
}

void StatusBoard::progress(const std::string& name, const log::ProgressRecord& record,
                           std::optional<double> eta_s) {
  ExperimentStatus* e = status_.find(name);
  if (!e) return;
  e->step = record.step;
  e->loss = record.loss;
  e->samples_per_s = record.samples_per_s;
  e->eta_s = eta_s;
  const double since_write =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_write_).count();
  if (since_write < min_interval_s_) return;
  try {
    merge_spool(status_, spool_);
    write();
  } catch (const Error& error) {
    if (!warned_) spdlog::warn("{} (the status is written again at the next change)", error.what());
    warned_ = true;
  }
}

void StatusBoard::ended(const std::string& name, const Ending& ending) {
  ExperimentStatus* e = status_.find(name);
  if (!e) return;
  e->state = ending.state;
  if (ending.state != ExperimentState::kFailed) e->step = ending.step;
  if (ending.loss) e->loss = ending.loss;
  if (ending.eval_loss) e->eval_loss = ending.eval_loss;
  if (ending.eval_accuracy) e->eval_accuracy = ending.eval_accuracy;
  e->error = ending.error;
  e->eta_s.reset();
  if (has_ended(ending.state)) e->ended = utc_now();
  merge_spool(status_, spool_);
  write();
}

ExperimentState StatusBoard::job_failed(const std::string& name, const FailureNote& note,
                                        bool resuming, bool supervised) {
  ExperimentStatus* e = status_.find(name);
  if (!e) return ExperimentState::kFailed;
  apply_failure_note(*e, note, supervised);
  if (resuming && e->state == ExperimentState::kInterrupted) ++e->lost_peer_resumes;
  const ExperimentState state = e->state;  // merge_spool may move the entries
  merge_spool(status_, spool_);
  write();
  return state;
}

void StatusBoard::stopped(const std::string& reason) {
  status_.daemon->state = "stopped";
  status_.daemon->reason = reason;
  write();
}

void StatusBoard::write() {
  status_.daemon->updated = utc_now();
  write_status_file(spool_.status_path(), status_);
  last_write_ = std::chrono::steady_clock::now();
  warned_ = false;
}

}  // namespace mpipe::serve
