// `mpipe supervise -- train CONFIG ...`: re-planned by the supervisor (see supervised_train.h).
#include "supervised_train.h"

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/host_clock.h"
#include "supervise/recovery.h"
#include "supervise/replan.h"
#include "supervise/run_progress.h"
#include "train_command.h"

namespace mpipe::app {

SupervisedTrain::SupervisedTrain(const std::vector<std::string>& command, int slots)
    : train_(supervise::parse_train_command(command)),
      experiment_(config::load_experiment(train_.config_path, train_.overrides)),
      layout_(supervise::experiment_layout(experiment_, slots)),
      check_(experiment_),
      command_(command),
      recoveries_(train_.run_dir.empty() ? default_run_dir(train_.config_path) : train_.run_dir) {}

std::optional<std::string> SupervisedTrain::prepare_relaunch(const LostHosts& lost) {
  supervise::Replan plan;
  try {
    plan = supervise::replan(layout_, total_slots(lost.alive),
                             supervise::tree_weight_grads(experiment_), check_);
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  const std::string& run_dir = recoveries_.run_dir();
  const supervise::Recovery recovery{.time = utc_now(),
                                     .failure = lost.failure,
                                     .lost_hosts = lost.lost_hosts,
                                     .old_hosts = host_list_text(lost.hosts),
                                     .new_hosts = host_list_text(lost.alive),
                                     .old_layout = layout_,
                                     .new_layout = plan.layout,
                                     .bit_identical = plan.bit_identical,
                                     .last_step = supervise::last_logged_step(run_dir),
                                     .resumed_from = supervise::newest_checkpoint_step(run_dir),
                                     .seconds_lost = -1.0,
                                     .experiment = {}};
  spdlog::warn("{}", supervise::recovery_line(recovery, lost.restart, lost.max_restarts));
  recoveries_.add(recovery, lost.failed_at);
  layout_ = plan.layout;
  command_ = supervise::relaunch_command(train_, layout_,
                                         supervise::needs_auto_partition(experiment_, layout_));
  return std::nullopt;
}

void SupervisedTrain::ended(bool completed) {
  // A run stopped by a signal ends with a checkpoint but no summary.json: its recoveries are in
  // the log only.
  if (completed && !recoveries_.empty()) recoveries_.add_to_summary();
}

}  // namespace mpipe::app
