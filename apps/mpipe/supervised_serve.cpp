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
  std::optional<serve::QueueEntry> active;
  try {
    active = spool.active();
  } catch (const std::exception& e) {  // (the daemon quarantines what it cannot read)
    spdlog::warn("supervise: {}", e.what());
  }
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
  const std::string config_path = spool.experiment_file(name);
  supervise::Recovery recovery{.time = utc_now(),
                               .failure = lost.failure,
                               .lost_hosts = lost.lost_hosts,
                               .old_hosts = host_list_text(lost.hosts),
                               .new_hosts = host_list_text(lost.alive),
                               .old_layout = {},
                               .new_layout = {},
                               .bit_identical = true,
                               .last_step = supervise::last_logged_step(run_dir),
                               .resumed_from = supervise::newest_checkpoint_step(run_dir),
                               .seconds_lost = -1.0,
                               .experiment = name};
  // The layout the relaunched daemon gives it: the daemon works it out the same way.
  try {
    const std::optional<serve::ResumeLayout> resume =
        serve::resume_layout(config_path, active->overrides, run_dir, ranks);
    if (resume) {
      recovery.new_layout = resume->layout;
      recovery.bit_identical = resume->bit_identical;
      recovery.old_layout = resume->saved;
    } else {
      recovery.new_layout =
          serve::world_layout(config::load_experiment(config_path, active->overrides), ranks);
    }
  } catch (const InputError& e) {
    spdlog::warn(
        "supervise: restart {} of at most {}: {}; {}; relaunching serve on {}: "
        "experiment {} cannot go on there, the daemon marks it failed and goes on with "
        "the queue: {}",
        lost.restart, lost.max_restarts, lost.failure, supervise::lost_hosts_text(lost.lost_hosts),
        host_list_text(lost.alive), name, e.what());
    return std::nullopt;
  }
  // The layout it ran on, as the daemon recorded it.
  if (const serve::ExperimentStatus* status = read_status(spool).find(name);
      status && status->stages > 0) {
    recovery.old_layout = {.stages = status->stages,
                           .replicas = status->replicas,
                           .micro_batches = status->micro_batches};
  }
  spdlog::warn("{}", supervise::recovery_line(recovery, lost.restart, lost.max_restarts));
  unfinished_.try_emplace(name, run_dir).first->second.add(recovery, lost.failed_at);
  return std::nullopt;
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
