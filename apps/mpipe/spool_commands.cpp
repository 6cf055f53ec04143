// The spool's subcommands: `mpipe serve` (the daemon, on every rank under MPI), and `submit`,
// `status` and `cancel` (one process each).
#include "spool_commands.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>
#include <optional>

#include "core/error.h"
#include "mpirun_grace.h"
#include "option_checks.h"
#include "progress_in_place.h"
#include "serve/daemon.h"
#include "serve/spool.h"
#include "serve/status_file.h"
#include "serve/submit.h"
#include "stop_signals.h"

namespace mpipe::app {
namespace {

// "30s", "5m", "1.5h" or plain seconds, as seconds > 0.
CLI::Validator duration_in_seconds() {
  const CLI::Validator positive(
      [](const std::string& seconds) {
        double value = 0;
        return CLI::detail::lexical_cast(seconds, value) && value > 0
                   ? std::string()
                   : "must be longer than 0 s, got " + seconds + " s";
      },
      "");
  // --help shows the option's type_name (DURATION), not the validators' "(FLOAT [UNIT]) AND ...".
  return unnamed(
      CLI::AsNumberWithUnit(std::map<std::string, double>{{"s", 1}, {"m", 60}, {"h", 3600}},
                            CLI::AsNumberWithUnit::CASE_SENSITIVE) &
      positive);
}

}  // namespace

ServeCommand::ServeCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "serve", "Run the experiments submitted to a spool, one after another (under mpirun/srun)");
  app_->add_option("--spool", spool_dir_, "Spool directory (created if needed)")
      ->required()
      ->check(kNotEmpty);
  app_->add_option("--idle-exit", idle_exit_s_,
                   "Stop after this long with nothing to run: 30s, 5m, 1h (default: never)")
      ->transform(duration_in_seconds())
      ->type_name("DURATION");
  app_->add_flag("--resume-lost-peer", resume_lost_peer_,
                 "Resume an experiment that loses a peer however often it was before, not once "
                 "(mpipe supervise sets it: it relaunches the daemon on the hosts that answer, "
                 "and its --max-restarts bounds the relaunches)");
}

int ServeCommand::run(const comm::Communicator& world) {
  serve::serve({.spool_dir = spool_dir_,
                .idle_exit_s = idle_exit_s_ > 0 ? std::optional(idle_exit_s_) : std::nullopt,
                .stop_signal = stop_on_signals(),
                .kill_grace_s = mpirun_kill_grace_s(),
                .progress = stdout,
                .progress_in_place = progress_in_place(),
                .resume_lost_peer = resume_lost_peer_},
               world);
  return 0;
}

SubmitCommand::SubmitCommand(CLI::App& app) {
  app_ = app.add_subcommand("submit", "Check an experiment file and queue it in a spool");
  app_->add_option("spool", spool_dir_, "Spool directory (created if needed)")
      ->required()
      ->check(kNotEmpty);
  app_->add_option("config", config_path_, "Experiment YAML file")->required()->check(kNotEmpty);
  app_->add_option("--set", overrides_, "Override a config key: key.path=value (repeatable)");
  app_->add_option("--name", experiment_name_,
                   "Unique name in the spool (default: <config name>-<n>)")
      ->check(kNotEmpty);
}

int SubmitCommand::run() {
  const serve::QueueEntry entry = serve::submit_experiment({.spool_dir = spool_dir_,
                                                            .config_path = config_path_,
                                                            .overrides = overrides_,
                                                            .name = experiment_name_});
  std::printf("queued %s (#%lld) in %s\n", entry.name.c_str(), static_cast<long long>(entry.seq),
              spool_dir_.c_str());
  return 0;
}

StatusCommand::StatusCommand(CLI::App& app) {
  app_ = app.add_subcommand("status", "Print the state of a spool's experiments");
  app_->add_option("spool", spool_dir_, "Spool directory")->required()->check(kNotEmpty);
}

int StatusCommand::run() {
  const serve::Spool spool(spool_dir_);
  check_input(spool.exists(), "{}: not a spool (no queue/ folder)", spool_dir_);
  std::vector<std::string> problems;
  const serve::SpoolStatus status = serve::spool_status_for_display(spool, problems);
  for (const std::string& problem : problems) spdlog::warn("{}", problem);
  std::fputs(serve::format_status_table(status).c_str(), stdout);
  return 0;
}

CancelCommand::CancelCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "cancel", "Cancel a queued experiment, or stop the running one with a checkpoint");
  app_->add_option("spool", spool_dir_, "Spool directory")->required()->check(kNotEmpty);
  app_->add_option("name", experiment_name_, "Experiment name")->required()->check(kNotEmpty);
}

int CancelCommand::run() {
  const serve::Spool spool(spool_dir_);
  if (spool.cancel(experiment_name_) == serve::CancelResult::kRemovedFromQueue) {
    std::printf("cancelled %s (it was queued)\n", experiment_name_.c_str());
  } else {
    std::printf(
        "cancelling %s: it stops with a checkpoint at its next step (if no daemon runs it now, "
        "the next one records it as cancelled instead of resuming it)\n",
        experiment_name_.c_str());
  }
  return 0;
}

}  // namespace mpipe::app
