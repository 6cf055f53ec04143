// run_train_job: preflight_train, the run directory's lock, then train::run_training with the
// experiment's log level (and the MPI progress thread if it asks for one).
#include "job/train_job.h"

#include <fmt/ranges.h>
#include <omp.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "checkpoint/run_lock.h"
#include "comm/agree.h"
#include "comm/progress_thread.h"
#include "comm/rank_placement.h"
#include "comm/watchdog.h"
#include "config/resolved_settings.h"
#include "config/stored_settings.h"
#include "core/error.h"
#include "kernels/context.h"
#include "log/logging.h"
#include "train/run_checkpoint.h"

namespace mpipe::job {
namespace {

// The progress thread pays off only on a core beside the rank's compute threads: warns when the
// rank's CPU binding leaves none (mpirun binds each rank to one core by default with 2 ranks).
void warn_without_spare_core() {
  cpu_set_t cores;
  CPU_ZERO(&cores);
  if (sched_getaffinity(0, sizeof cores, &cores) != 0) return;
  const int num_cores = CPU_COUNT(&cores);
  const int num_threads = omp_get_max_threads();
  if (num_cores > num_threads) return;
  spdlog::warn(
      "comm.progress_thread: this rank is bound to {} core{} and computes with {} thread{}, so "
      "the progress thread has no core of its own and slows the compute; bind each rank to one "
      "core more than its threads (mpirun --map-by slot:PE={})",
      num_cores, num_cores == 1 ? "" : "s", num_threads, num_threads == 1 ? "" : "s",
      num_threads + 1);
}

// Collective: rank 0 says where every rank runs (host, CPUs, OpenMP threads), and warns when a
// rank was given fewer CPUs than it has threads.
void log_placement(const comm::Communicator& world) {
  const std::vector<comm::RankPlacement> ranks =
      comm::exchange_placements(world, comm::own_placement());
  if (world.rank() != 0) return;
  const int threads = omp_get_max_threads();
  spdlog::info("{}", comm::describe_placement(ranks, threads));
  const std::string shared = comm::oversubscribed_rank(ranks, threads);
  if (!shared.empty()) spdlog::warn("{}; set OMP_NUM_THREADS or bind each rank to more", shared);
}

// `inputs.stored_settings`: puts the overrides that restore the settings of the run's newest
// committed checkpoint before the command line's. Rank 0 reads and works them out; every rank
// gets its list. Returns the line rank 0 logs about them (empty: nothing restored).
std::string restore_stored_settings(TrainInputs& inputs, const comm::Communicator& world) {
  std::vector<std::string> restored;
  std::string note;
  comm::agree(world, [&] {
    if (world.rank() != 0) return;
    const std::optional<train::StoredSettings> stored =
        train::newest_stored_settings(inputs.run_dir);
    if (!stored) return;
    config::SettingsRestore restore = config::resume_overrides(
        stored->settings,
        config::resolved_settings(config::load_experiment(inputs.config_path, inputs.overrides)),
        inputs.overrides);
    restored = std::move(restore.overrides);
    if (restore.restored.empty()) return;
    note = fmt::format("{}: resuming with the settings stored with step {} where {}{} differs: {}",
                       inputs.run_dir, stored->step, inputs.config_path,
                       inputs.overrides.empty() ? "" : " with this --set",
                       fmt::join(restore.restored, "; "));
  });
  std::string text = nlohmann::json(restored).dump();
  world.broadcast(text, 0);
  std::vector<std::string> overrides = nlohmann::json::parse(text).get<std::vector<std::string>>();
  overrides.insert(overrides.end(), inputs.overrides.begin(), inputs.overrides.end());
  inputs.overrides = std::move(overrides);
  return note;
}

// `inputs.resuming`: how the run's newest committed checkpoint summed its weight gradients
// (train::stored_weight_grads), which weight_grads: auto keeps. Rank 0 reads it; every rank gets
// it.
std::optional<train::ResumedWeightGrads> resumed_weight_grads(const TrainInputs& inputs,
                                                              const comm::Communicator& world) {
  nlohmann::json choice;  // null: none
  comm::agree(world, [&] {
    if (world.rank() != 0 || !inputs.resuming) return;
    const std::optional<train::StoredSettings> stored =
        train::newest_stored_settings(inputs.run_dir);
    if (!stored) return;
    const std::optional<train::ResumedWeightGrads> found =
        train::checkpoint_weight_grads(inputs.run_dir, *stored);
    if (found) {
      choice = {{"weight_grads", plan::to_string(found->weight_grads)},
                {"weight_group", found->weight_group}};
    }
  });
  std::string text = choice.dump();
  world.broadcast(text, 0);
  choice = nlohmann::json::parse(text);
  if (choice.is_null()) return std::nullopt;
  return train::ResumedWeightGrads{
      .weight_grads =
          *value_named(plan::kWeightGradsNames, choice["weight_grads"].get<std::string>()),
      .weight_group = choice["weight_group"].get<int>()};
}

}  // namespace

void use_experiment_deadlines(const std::string& config_path,
                              const std::vector<std::string>& overrides,
                              const comm::Communicator& world) {
  comm::Watchdog* watchdog = world.watchdog();
  if (!watchdog) return;
  comm::CommConfig deadlines;
  try {
    deadlines = config::load_comm_section(config_path, overrides);
  } catch (const InputError&) {
    // The defaults: preflight reads the file again and reports its problem on every rank.
  }
  watchdog->configure(deadlines);
}

TrainOutcome run_train_job(TrainInputs inputs, train::RunOptions options,
                           const comm::Communicator& world) {
  use_experiment_deadlines(inputs.config_path, inputs.overrides, world);
  const std::string restored =
      inputs.stored_settings ? restore_stored_settings(inputs, world) : std::string();
  inputs.resumed_weight_grads = resumed_weight_grads(inputs, world);
  PreflightResult checked = [&] {
    try {
      return preflight_train(inputs, world);
    } catch (const AgreedError&) {
      // A restored setting may be what fails (a layout a resume's --set fixed, on another world
      // size): say which values are the run's, not the file's, before the error.
      if (world.rank() == 0 && !restored.empty()) spdlog::info("{}", restored);
      throw;
    }
  }();
  log::setup_logging(world.rank(), world.size(), checked.experiment.log.level);
  if (world.rank() == 0 && !restored.empty()) spdlog::info("{}", restored);
  if (world.rank() == 0 && plan::keeps_resumed_weight_grads(checked.experiment.pipeline)) {
    const plan::PipelinePlan& plan = checked.plan.pipeline;
    spdlog::info(
        "pipeline.weight_grads: auto keeps {}, as {}'s checkpoint was trained (set "
        "pipeline.weight_grads to change it)",
        plan.weight_grads == plan::WeightGrads::kGrouped
            ? fmt::format("grouped by {}", plan.weight_group)
            : plan::to_string(plan.weight_grads),
        inputs.run_dir);
  }
  log_placement(world);
  if (comm::Watchdog* watchdog = world.watchdog()) {  // this experiment's deadlines
    watchdog->configure(checked.experiment.comm);
    watchdog->set_stop_flag(options.stop_requested);  // a stop during a hung wait ends the job
  }
  // One job per run directory: rank 0 holds <run_dir>/.lock until the run ends (--resume on a
  // run directory that does not exist fails first, so a mistyped one is not created).
  std::optional<checkpoint::RunLock> lock;
  comm::agree(world, [&] {
    if (world.rank() != 0) return;
    if (options.resume == train::ResumeMode::kRequired &&
        !std::filesystem::exists(inputs.run_dir)) {
      train::require_committed_checkpoint(inputs.run_dir);
    }
    lock.emplace(inputs.run_dir);
    if (!inputs.resuming) check_run_dir_is_fresh(inputs.run_dir);  // again, under the lock
  });
  options.run_dir = inputs.run_dir;
  options.export_weights = inputs.export_path;
  options.init_weights = inputs.init_weights;
  options.settings = config::resolved_settings(checked.experiment);
  if (options.on_planned) options.on_planned(checked.experiment, checked.plan.topology);
  kernels::KernelContext kernels(checked.experiment.train.precision);
  // Joined when the run ends or throws, before anything else calls MPI_Abort or MPI_Finalize. (A
  // thread that cannot start on one rank ends the job on all: comm.progress_thread may differ
  // between ranks, so every rank takes part.)
  std::optional<comm::ProgressThread> progress;
  comm::agree(world, [&] {
    if (!checked.experiment.comm.progress_thread) return;
    progress.emplace();
    warn_without_spare_core();
    spdlog::debug("MPI progress thread started (a call into MPI every {} us)",
                  comm::ProgressThread::kDefaultPause.count());
  });
  train::RunResult result = train::run_training(checked.experiment, *checked.dataset,
                                                std::move(checked.plan), options, world, kernels);
  if (progress) progress->stop();
  return {.experiment = std::move(checked.experiment), .result = std::move(result)};
}

}  // namespace mpipe::job
