// `mpipe supervise -- serve --spool DIR ...`: the daemon under the supervisor (see
// supervised_serve.h).
#include "supervised_serve.h"

#include <spdlog/spdlog.h>

#include "config/experiment.h"
#include "core/error.h"
#include "core/host_clock.h"
#include "serve/resume_layout.h"
#include "serve/spool.h"
#include "serve/status_file.h"
#include "supervise/grow_back.h"
#include "supervise/recovery.h"
#include "supervise/run_progress.h"

namespace mpipe::app {
namespace {

using Clock = supervise::RunRecoveries::Clock;

// status.json is read at most this often for finished experiments.
constexpr auto kStatusReadInterval = std::chrono::seconds(1);

// The spool's status file; empty when it cannot be read (the daemon rewrites a damaged one).
serve::SpoolStatus read_status(const serve::Spool& spool) {
  try {
    return serve::read_status_file(spool.status_path());
  } catch (const InputError&) {
    return {};
  }
}

// How the spool's experiment `name` (its entry `active`) resumes on `ranks` ranks: the layout and
// whether it keeps the bits (serve::resume_layout, as the daemon works it out) in `change`'s
// new_layout and bit_identical; the layout it ran on, as the daemon recorded it, in its
// old_layout. Throws InputError when it cannot resume there.
void resume_on(const serve::Spool& spool, const serve::QueueEntry& active, int ranks,
               supervise::LayoutChange& change) {
  const std::string run_dir = spool.run_dir(active.name);
  const std::string config_path = spool.experiment_file(active.name);
  const std::optional<serve::ResumeLayout> resume =
      serve::resume_layout(config_path, active.overrides, run_dir, ranks);
  if (resume) {
    change.new_layout = resume->layout;
    change.bit_identical = resume->bit_identical;
    change.old_layout = resume->saved;
  } else {
    change.new_layout =
        serve::world_layout(config::load_experiment(config_path, active.overrides), ranks);
    change.bit_identical = true;
  }
  if (const serve::ExperimentStatus* status = read_status(spool).find(active.name);
      status && status->stages > 0) {
    change.old_layout = {.stages = status->stages,
                         .replicas = status->replicas,
                         .micro_batches = status->micro_batches};
  }
}

// The spool's active experiment; nullopt when there is none or it cannot be read (the daemon
// quarantines what it cannot read).
std::optional<serve::QueueEntry> active_entry(const serve::Spool& spool) {
  try {
    return spool.active();
  } catch (const std::exception& e) {
    spdlog::warn("supervise: {}", e.what());
    return std::nullopt;
  }
}

// Why experiment `name` stays on the hosts as they are rather than resume as `change` plans, or
// nullopt.
std::optional<std::string> not_widened(const std::string& name,
                                       const supervise::LayoutChange& change) {
  if (change.bit_identical) return std::nullopt;
  return fmt::format(
      "experiment {} would resume as {}, not bit-identical (a change of D keeps the bits only "
      "under weight_grads: tree, between powers of two)",
      name, supervise::to_string(change.new_layout));
}

}  // namespace

SupervisedServe::SupervisedServe(const std::vector<std::string>& command)
    : serve_(supervise::parse_serve_command(command)) {}

void SupervisedServe::watch() {
  for (auto& [name, recoveries] : unfinished_) recoveries.watch();
  if (unfinished_.empty() || Clock::now() < next_status_read_) return;
  next_status_read_ = Clock::now() + kStatusReadInterval;
  record_finished();
}

std::optional<std::string> SupervisedServe::prepare_relaunch(const LostHosts& lost) {
  const serve::Spool spool(serve_.spool_dir);
  const int ranks = total_slots(lost.alive);
  const std::optional<serve::QueueEntry> active = active_entry(spool);
  if (!active) {
    spdlog::warn(
        "supervise: restart {} of at most {}: {}; {}; relaunching serve on {} ({} "
        "ranks), no experiment was running",
        lost.restart, lost.max_restarts, lost.failure, supervise::lost_hosts_text(lost.lost_hosts),
        host_list_text(lost.alive), ranks);
    return std::nullopt;
  }
  const std::string& name = active->name;
  const std::string run_dir = spool.run_dir(name);
  supervise::Recovery recovery{
      .change = {.time = utc_now(),
                 .old_hosts = host_list_text(lost.hosts),
                 .new_hosts = host_list_text(lost.alive),
                 .old_layout = {},
                 .new_layout = {},
                 .last_step = supervise::last_logged_step(run_dir),
                 .resumed_from = supervise::newest_checkpoint_step(run_dir),
                 .experiment = name},
      .failure = lost.failure,
      .lost_hosts = lost.lost_hosts};
  // The layout the relaunched daemon gives it: the daemon works it out the same way.
  try {
    resume_on(spool, *active, ranks, recovery.change);
  } catch (const InputError& e) {
    spdlog::warn(
        "supervise: restart {} of at most {}: {}; {}; relaunching serve on {}: "
        "experiment {} cannot go on there, the daemon marks it failed and goes on with "
        "the queue: {}",
        lost.restart, lost.max_restarts, lost.failure, supervise::lost_hosts_text(lost.lost_hosts),
        host_list_text(lost.alive), name, e.what());
    return std::nullopt;
  }
  spdlog::warn("{}", supervise::recovery_line(recovery, lost.restart, lost.max_restarts));
  unfinished_.try_emplace(name, run_dir).first->second.add(recovery, lost.failed_at);
  return std::nullopt;
}

std::optional<std::string> SupervisedServe::plan_widening(const ReturnedHosts& returned) {
  const serve::Spool spool(serve_.spool_dir);
  const int ranks = wider_ranks_ = total_slots(returned.wider);
  widening_ = {.change = {.time = {},
                          .old_hosts = host_list_text(returned.hosts),
                          .new_hosts = host_list_text(returned.wider),
                          .old_layout = {},
                          .new_layout = {}},
               .returned_hosts = {}};
  for (const auto& host : returned.returned) widening_.returned_hosts.push_back(host.host);
  const std::optional<serve::QueueEntry> active = active_entry(spool);
  if (!active) {
    spdlog::info(
        "supervise: {}; stopping serve to relaunch it on {} ({} ranks), no experiment is running",
        supervise::answer_again_text(returned.returned), widening_.change.new_hosts, ranks);
    return std::nullopt;
  }
  widening_.change.experiment = active->name;
  try {
    resume_on(spool, *active, ranks, widening_.change);
  } catch (const InputError& e) {
    return fmt::format("experiment {} cannot go on there: {}", active->name, e.what());
  }
  if (auto reason = not_widened(active->name, widening_.change)) {
    return reason;
  }
  spdlog::info("{}", supervise::widening_stop_line(widening_));
  return std::nullopt;
}

bool SupervisedServe::under_way(Clock::time_point launched) const {
  // The daemon's rank 0 writes status.json ("serving") once every rank has started.
  return supervise::written_since(serve::Spool(serve_.spool_dir).status_path(), launched);
}

bool SupervisedServe::finished_since(Clock::time_point) const {
  // A daemon stopped by a signal says so in status.json; one that ran out of work (--idle-exit)
  // says "idle".
  const serve::SpoolStatus status = read_status(serve::Spool(serve_.spool_dir));
  return status.daemon && status.daemon->reason == "idle";
}

bool SupervisedServe::widen(Clock::time_point stopped_at) {
  const serve::Spool spool(serve_.spool_dir);
  const int ranks = wider_ranks_;
  const std::optional<serve::QueueEntry> active = active_entry(spool);
  if (active && active->name != widening_.change.experiment) {
    // Another experiment started since the plan: it must resume on the wider world as well.
    widening_.change.experiment = active->name;
    try {
      resume_on(spool, *active, ranks, widening_.change);
    } catch (const InputError& e) {
      spdlog::info("supervise: not widening: experiment {} cannot go on on {}: {}", active->name,
                   widening_.change.new_hosts, e.what());
      return false;
    }
    if (auto reason = not_widened(active->name, widening_.change)) {
      spdlog::info("supervise: not widening: {}", *reason);
      return false;
    }
  }
  ++widenings_;
  if (!active) {
    spdlog::info("supervise: widening {}: relaunching serve on {} ({} ranks)", widenings_,
                 widening_.change.new_hosts, ranks);
    return true;
  }
  const std::string run_dir = spool.run_dir(active->name);
  widening_.change.time = utc_now();
  widening_.change.last_step = supervise::last_logged_step(run_dir);
  widening_.change.resumed_from = supervise::newest_checkpoint_step(run_dir);
  spdlog::info("{}", supervise::widening_line(widening_, widenings_));
  unfinished_.try_emplace(active->name, run_dir).first->second.add(widening_, stopped_at);
  return true;
}

void SupervisedServe::ended(bool) { record_finished(); }

void SupervisedServe::record_finished() {
  const serve::SpoolStatus status = read_status(serve::Spool(serve_.spool_dir));
  for (auto it = unfinished_.begin(); it != unfinished_.end();) {
    const serve::ExperimentStatus* experiment = status.find(it->first);
    if (!experiment || !serve::has_ended(experiment->state)) {
      ++it;
      continue;
    }
    if (experiment->state == serve::ExperimentState::kDone) {
      try {
        it->second.add_to_summary();
      } catch (const Error& e) {
        spdlog::warn("supervise: {}; {}'s recoveries are in its metrics.jsonl only", e.what(),
                     it->first);
      }
    }
    it = unfinished_.erase(it);
  }
}

}  // namespace mpipe::app
