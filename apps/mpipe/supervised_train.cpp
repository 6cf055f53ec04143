// `mpipe supervise -- train CONFIG ...`: re-planned by the supervisor (see supervised_train.h).
#include "supervised_train.h"

#include <spdlog/spdlog.h>

#include <variant>

#include "config/experiment.h"
#include "core/error.h"
#include "core/host_clock.h"
#include "supervise/grow_back.h"
#include "supervise/recovery.h"
#include "supervise/replan.h"
#include "supervise/run_progress.h"
#include "train_command.h"

namespace mpipe::app {

SupervisedTrain::SupervisedTrain(const std::vector<std::string>& command, int slots)
    : train_(supervise::parse_train_command(command)),
      check_(config::load_experiment(train_.config_path, train_.overrides)),
      layout_(supervise::experiment_layout(check_.experiment(), slots)),
      command_(command),
      recoveries_(train_.run_dir.empty() ? default_run_dir(train_.config_path) : train_.run_dir) {}

std::optional<std::string> SupervisedTrain::prepare_relaunch(const LostHosts& lost) {
  supervise::Replan plan;
  const std::string& run_dir = recoveries_.run_dir();
  try {
    check_.resume_from(run_dir);  // the relaunch resumes its newest checkpoint
    plan = supervise::replan(layout_, total_slots(lost.alive),
                             supervise::tree_weight_grads(check_.experiment()), check_);
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  const supervise::Recovery recovery{
      .change = {.time = utc_now(),
                 .old_hosts = host_list_text(lost.hosts),
                 .new_hosts = host_list_text(lost.alive),
                 .old_layout = layout_,
                 .new_layout = plan.layout,
                 .bit_identical = plan.bit_identical,
                 .last_step = supervise::last_logged_step(run_dir),
                 .resumed_from = supervise::newest_checkpoint_step(run_dir)},
      .failure = lost.failure,
      .lost_hosts = lost.lost_hosts};
  spdlog::warn("{}", supervise::recovery_line(recovery, lost.restart, lost.max_restarts));
  recoveries_.add(recovery, lost.failed_at);
  layout_ = plan.layout;
  command_ = supervise::relaunch_command(
      train_, layout_, supervise::needs_auto_partition(check_.experiment(), layout_));
  return std::nullopt;
}

std::optional<std::string> SupervisedTrain::plan_widening(const ReturnedHosts& returned) {
  try {
    check_.resume_from(recoveries_.run_dir());  // the wider launch resumes its newest checkpoint
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  const std::variant<supervise::Replan, std::string> wider =
      supervise::plan_wider(layout_, total_slots(returned.wider),
                            supervise::tree_weight_grads(check_.experiment()), check_);
  if (const auto* reason = std::get_if<std::string>(&wider)) return *reason;
  const auto& plan = std::get<supervise::Replan>(wider);
  widening_ = {.change = {.time = {},
                          .old_hosts = host_list_text(returned.hosts),
                          .new_hosts = host_list_text(returned.wider),
                          .old_layout = layout_,
                          .new_layout = plan.layout,
                          .bit_identical = plan.bit_identical},
               .returned_hosts = {}};
  for (const auto& host : returned.returned) widening_.returned_hosts.push_back(host.host);
  spdlog::info("{}", supervise::widening_stop_line(widening_));
  return std::nullopt;
}

bool SupervisedTrain::under_way(supervise::RunRecoveries::Clock::time_point launched) const {
  // Rank 0 writes metrics.jsonl (a resume trims it) once every rank has started.
  return supervise::written_since(recoveries_.run_dir() + "/metrics.jsonl", launched);
}

bool SupervisedTrain::finished_since(supervise::RunRecoveries::Clock::time_point launched) const {
  // A run that finishes writes summary.json; one stopped by a signal does not.
  return supervise::written_since(recoveries_.run_dir() + "/summary.json", launched);
}

bool SupervisedTrain::widen(supervise::RunRecoveries::Clock::time_point stopped_at) {
  const std::string& run_dir = recoveries_.run_dir();
  widening_.change.time = utc_now();
  widening_.change.last_step = supervise::last_logged_step(run_dir);
  widening_.change.resumed_from = supervise::newest_checkpoint_step(run_dir);
  spdlog::info("{}", supervise::widening_line(widening_, recoveries_.widenings() + 1));
  recoveries_.add(widening_, stopped_at);
  layout_ = widening_.change.new_layout;
  command_ = supervise::relaunch_command(
      train_, layout_, supervise::needs_auto_partition(check_.experiment(), layout_));
  return true;
}

void SupervisedTrain::ended(bool completed) {
  // A run stopped by a signal ends with a checkpoint but no summary.json: its recoveries and
  // widenings are in the log and metrics.jsonl only.
  if (completed && !recoveries_.empty()) recoveries_.add_to_summary();
}

}  // namespace mpipe::app
