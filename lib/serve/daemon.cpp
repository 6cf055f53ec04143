// The daemon loop: agree on the next action (rank 0 decides from the spool), run the experiment
// on every rank, record how it ended; exit on a signal or after the idle timeout.
#include "serve/daemon.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "comm/agree.h"
#include "comm/watchdog.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "core/host_clock.h"
#include "core/memory_account.h"
#include "job/train_job.h"
#include "log/logging.h"
#include "serve/resume_layout.h"
#include "serve/spool.h"
#include "serve/status_board.h"

namespace mpipe::serve {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kCancelCheckInterval = std::chrono::milliseconds(200);

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The spool's lock, held for the daemon's life (the kernel releases it however the process ends).
FileLock lock_spool(const Spool& spool) {
  std::optional<FileLock> lock = FileLock::try_lock(spool.lock_path());
  if (!lock) {
    const std::string holder = describe_lock_holder(read_lock_contents(spool.lock_path()));
    throw InputError(fmt::format("{}: in use by {} (lock {})", spool.dir(),
                                 holder.empty() ? "another daemon" : "mpipe serve " + holder,
                                 spool.lock_path()));
  }
  lock->write_holder();
  return std::move(*lock);
}

class Daemon {
 public:
  Daemon(const ServeOptions& options, const comm::Communicator& world)
      : options_(options), world_(world), spool_(options.spool_dir) {
    comm::agree(world_, [&] {
      if (!is_root()) return;
      spool_.create();
      lock_.emplace(lock_spool(spool_));
      board_.emplace(spool_, world_.size());
      spdlog::info("serving spool {} on {} ranks (pid {} on host {})", spool_.dir(), world_.size(),
                   this_pid(), this_host());
    });
  }

  StopReason run() {
    record_job_failure();
    idle_since_ = Clock::now();
    StopReason reason = StopReason::kSignal;
    while (true) {
      const bool signalled = options_.stop_signal && options_.stop_signal->load();
      if (!world_.all_true(!signalled)) break;
      const nlohmann::json action = next_action();
      if (action["action"] == "run") {
        run_experiment(action);
        idle_since_ = Clock::now();
      } else if (action["action"] == "exit") {
        reason = StopReason::kIdle;
        break;
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_s));
      }
    }
    comm::agree(world_, [&] {
      if (!is_root()) return;
      board_->stopped(reason == StopReason::kIdle ? "idle" : "signal");
      if (reason == StopReason::kIdle) {
        spdlog::info("idle for {:g} s (--idle-exit): stopping", *options_.idle_exit_s);
      } else {
        spdlog::info("stopped by a signal");
      }
    });
    return reason;
  }

 private:
  bool is_root() const { return world_.rank() == 0; }

  // Collective: if the active experiment ended the last job (a rank's failure note, see
  // note_job_failure), rank 0 records it as failed and removes it from the active slot, or, after
  // a first lost peer (any, under the supervisor: ServeOptions::resume_lost_peer), as interrupted
  // (the loop then resumes it). Every rank removes its note (a
  // damaged one: rank 0 moves its own to quarantine/).
  // Node-local spools: each rank reads its own; the lowest rank's note counts.
  void record_job_failure() {
    std::string name;
    comm::agree(world_, [&] {
      if (!is_root()) return;
      if (const std::optional<QueueEntry> active = spool_.active()) name = active->name;
    });
    world_.broadcast(name, 0);
    if (name.empty()) return;
    std::optional<FailureNote> note;
    comm::agree(world_, [&] {
      try {
        note = spool_.read_failure_note(name);
      } catch (const InputError& e) {  // rank 0 keeps it aside; the other ranks' copies go below
        if (!is_root()) return;
        spdlog::warn("{}; moved to {}", e.what(),
                     spool_.quarantine(spool_.failure_note_path(name)));
      }
    });
    const auto [has_note, json] =
        world_.first_error(note ? 1 : 0, note ? failure_note_text(*note) : "");
    if (!has_note) {  // none, or none readable: resumed like an experiment whose daemon died
      comm::agree(world_, [&] { spool_.remove_failure_note(name); });
      return;
    }
    comm::agree(world_, [&] {
      if (!is_root()) return;
      const FailureNote first = parse_failure_note(json);
      if (board_->job_failed(name, first, true, options_.resume_lost_peer) ==
          ExperimentState::kFailed) {
        spool_.finish_active();
        spdlog::error("{}: failed: {}", name, first.error);
      } else {
        spdlog::warn(
            "{}: the last job ended when it lost a peer ({}); resuming it from its last "
            "checkpoint ({})",
            name, first.error, options_.resume_lost_peer ? "under mpipe supervise" : "once");
      }
    });
    comm::agree(world_, [&] { spool_.remove_failure_note(name); });
  }

  // This rank ends the whole job (the error passes on to main, which aborts it): it first leaves
  // a failure note for the next daemon and, on rank 0, records the failure in status.json. Best
  // effort: a note that cannot be written is logged, the job ends anyway.
  void record_failure_before_abort(const std::string& name, JobFailure failure, const char* error) {
    const FailureNote note{
        .name = name, .failure = failure, .error = error, .rank = world_.rank(), .time = utc_now()};
    try {
      spool_.write_failure_note(note);
      if (is_root()) board_->job_failed(name, note, false, options_.resume_lost_peer);
    } catch (const std::exception& e) {
      spdlog::warn("{}", e.what());
    }
  }

  // Collective: rank 0 looks at the spool and every rank gets the same action: {"action": "run",
  // "name", "yaml" (the experiment file's text), "overrides"}, {"action": "idle"} or
  // {"action": "exit"}. Rank 0 has written runs/<name>/experiment.yaml.
  nlohmann::json next_action() {
    nlohmann::json action = {{"action", "idle"}};
    comm::agree(world_, [&] {
      if (!is_root()) return;
      for (const QuarantinedEntry& entry : spool_.quarantine_damaged_entries()) {
        board_->quarantined(entry);
        spdlog::error("{}: failed: {}", entry.name, entry.error);
      }
      board_->refresh();
      while (const std::optional<QueueEntry> entry = spool_.take_next()) {
        if (spool_.cancel_requested(entry->name)) {  // cancelled while no daemon ran it
          const ExperimentStatus* known = board_->status().find(entry->name);
          board_->ended(entry->name,
                        {.state = ExperimentState::kCancelled, .step = known ? known->step : 0});
          spool_.finish_active();
          spdlog::info("{}: cancelled", entry->name);
          continue;
        }
        const std::string yaml = spool_.experiment_text(*entry);
        spool_.write_experiment_file(entry->name, yaml);
        action = {{"action", "run"},
                  {"name", entry->name},
                  {"yaml", yaml},
                  {"overrides", entry->overrides}};
        board_->started(*entry);
        return;
      }
      if (options_.idle_exit_s && seconds_since(idle_since_) >= *options_.idle_exit_s) {
        action = {{"action", "exit"}};
      }
    });
    std::string text = action.dump();
    world_.broadcast(text, 0);
    return nlohmann::json::parse(text);
  }

  // How every rank runs an experiment; rank 0 also answers the step loop's cancel question from
  // cancel/NAME (looked at every 0.2 s; `cancel_seen` says whether it did), records the layout
  // and progress, and copies its progress lines to the experiment's log (`log`, if open).
  train::RunOptions run_options(const std::string& name, bool& cancel_seen, log::LogFileCopy* log) {
    train::RunOptions options;
    options.resume = train::ResumeMode::kIfPresent;
    options.progress = options_.progress;
    options.progress_in_place = options_.progress_in_place;
    options.progress_label = name;
    options.stop_requested = options_.stop_signal;
    options.kill_grace_s = options_.kill_grace_s;
    if (!is_root()) return options;
    options.cancel_requested = [this, name, &cancel_seen, next_check = Clock::now()]() mutable {
      if (!cancel_seen && Clock::now() >= next_check) {
        cancel_seen = spool_.cancel_requested(name);
        next_check = Clock::now() + kCancelCheckInterval;
      }
      return cancel_seen;
    };
    auto total_steps = std::make_shared<int64_t>(0);
    options.on_planned = [this, name, total_steps](const config::Experiment& experiment,
                                                   const comm::Topology& layout) {
      board_->planned(name, layout.num_pipeline_ranks, layout.num_replicas,
                      experiment.pipeline.micro_batches);
      *total_steps = experiment.train.steps;
    };
    options.on_progress = [this, name, log, total_steps](const log::ProgressRecord& record,
                                                         std::optional<double> eta_s) {
      board_->progress(name, record, eta_s);
      if (log) {
        log->write(fmt::format("{}: {}", name, log::format_progress(record, *total_steps, eta_s)));
      }
    };
    return options;
  }

  // Collective: when the experiment resumes a checkpoint that its plan for this world cannot
  // continue bit-identically (another number of ranks than the checkpoint's: a lost host, a
  // restart on other nodes), rank 0 re-plans it (resume_layout, logged) and every rank adds the
  // layout's --set values to `overrides`. Throws AgreedError with the line when no layout fits.
  void add_resume_layout(const std::string& name, const std::string& config_path,
                         const std::string& run_dir, std::vector<std::string>& overrides) {
    std::vector<std::string> settings;
    comm::agree(world_, [&] {
      if (!is_root()) return;
      const std::optional<ResumeLayout> resume =
          resume_layout(config_path, overrides, run_dir, world_.size());
      if (!resume || resume->settings.empty()) return;
      settings = resume->settings;
      spdlog::info("{}: {}", name, describe(*resume, world_.size()));
    });
    std::string text = nlohmann::json(settings).dump();
    world_.broadcast(text, 0);
    for (std::string& setting : nlohmann::json::parse(text).get<std::vector<std::string>>()) {
      overrides.push_back(std::move(setting));
    }
  }

  // Collective: runs one experiment on every rank and records how it ended.
  void run_experiment(const nlohmann::json& action) {
    const std::string name = action["name"].get<std::string>();
    const std::string run_dir = spool_.run_dir(name);
    std::optional<log::LogFileCopy> experiment_log;  // rank 0's lines while it runs
    if (is_root()) {
      try {
        experiment_log.emplace(spool_.experiment_log(name), world_.rank(), world_.size());
      } catch (const spdlog::spdlog_ex& e) {
        spdlog::warn("{}: no log of its own: {}", name, e.what());
      }
      spdlog::info("{}: starting ({})", name, run_dir);
    }
    bool cancel_seen = false;
    Ending ending;
    try {
      // Each rank runs its own copy of the experiment file: on a shared file system it is rank
      // 0's (written before the broadcast), on node-local disks each rank writes one.
      std::string config_path;
      comm::agree(world_, [&] {
        config_path = spool_.write_experiment_file(name, action["yaml"].get<std::string>());
      });
      std::vector<std::string> overrides = action["overrides"].get<std::vector<std::string>>();
      add_resume_layout(name, config_path, run_dir, overrides);
      const job::TrainInputs inputs{
          .config_path = config_path,
          .overrides = std::move(overrides),
          .run_dir = run_dir,
          .export_path = (std::filesystem::path(run_dir) / "weights.safetensors").string(),
          .resuming = true,
          .any_world = true};
      const job::TrainOutcome outcome = job::run_train_job(
          inputs, run_options(name, cancel_seen, experiment_log ? &*experiment_log : nullptr),
          world_);
      ending = ending_of(outcome.result, !world_.all_true(!cancel_seen));
    } catch (const AgreedError& e) {
      ending = {.state = ExperimentState::kFailed, .error = e.what()};
    } catch (const MemoryLimitExceeded& e) {
      record_failure_before_abort(name, JobFailure::kMemoryLimit, e.what());
      throw;
    } catch (const comm::WatchdogTimeout& e) {
      record_failure_before_abort(name, JobFailure::kLostPeer, e.what());
      throw;
    }
    log::setup_logging(world_.rank(), world_.size(), "info");
    comm::agree(world_, [&] {
      if (!is_root()) return;
      board_->ended(name, ending);
      if (ending.state != ExperimentState::kInterrupted) spool_.finish_active();
      report(name, ending);
    });
  }

  static Ending ending_of(const train::RunResult& result, bool cancelled) {
    if (result.preempted) {
      return {.state = cancelled ? ExperimentState::kCancelled : ExperimentState::kInterrupted,
              .step = result.steps_done};
    }
    if (result.already_finished) {  // its daemon stopped after the last checkpoint
      return {.state = ExperimentState::kDone, .step = result.steps_done};
    }
    return {.state = ExperimentState::kDone,
            .step = result.steps_done,
            .loss = result.final_train_loss,
            .eval_loss = result.final_eval_loss,
            .eval_accuracy = result.final_eval_accuracy};
  }

  void report(const std::string& name, const Ending& ending) const {
    switch (ending.state) {
      case ExperimentState::kDone:
        if (!ending.eval_loss) {
          spdlog::info("{}: done at step {} (already finished)", name, ending.step);
          break;
        }
        spdlog::info("{}: done at step {}: train loss {:.4f} | test loss {:.4f}{}", name,
                     ending.step, ending.loss.value_or(0), *ending.eval_loss,
                     ending.eval_accuracy  // a classifying loss's only
                         ? fmt::format(" | test accuracy {:.2f}%", 100.0 * *ending.eval_accuracy)
                         : std::string());
        break;
      case ExperimentState::kFailed:
        spdlog::error("{}: failed: {}", name, ending.error);
        break;
      case ExperimentState::kCancelled:
        spdlog::info("{}: cancelled at step {} (checkpoint in {})", name, ending.step,
                     spool_.run_dir(name));
        break;
      default:
        spdlog::warn(
            "{}: interrupted at step {}; checkpoint saved, the next daemon on {} "
            "resumes it",
            name, ending.step, spool_.dir());
    }
  }

  const ServeOptions& options_;
  const comm::Communicator& world_;
  Spool spool_;
  std::optional<FileLock> lock_;      // rank 0
  std::optional<StatusBoard> board_;  // rank 0
  Clock::time_point idle_since_;
};

}  // namespace

StopReason serve(const ServeOptions& options, const comm::Communicator& world) {
  Daemon daemon(options, world);
  return daemon.run();
}

}  // namespace mpipe::serve
