// `mpipe train`: trains the model an experiment file describes, on every rank under MPI.
#include "train_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "comm/watchdog.h"
#include "job/train_job.h"
#include "mpirun_grace.h"
#include "option_checks.h"
#include "progress_in_place.h"
#include "stop_signals.h"
#include "train/training_run.h"

namespace mpipe::app {

std::string default_run_dir(const std::string& config_path) {
  return (std::filesystem::path("runs") / std::filesystem::path(config_path).stem()).string();
}

TrainCommand::TrainCommand(CLI::App& app) {
  app_ = app.add_subcommand("train", "Train a model described by an experiment YAML file");
  app_->add_option("config", config_path_, "Experiment YAML file")->required()->check(kNotEmpty);
  app_->add_option("--set", overrides_, "Override a config key: key.path=value (repeatable)");
  app_->add_option("--run-dir", run_dir_, "Run directory (default: runs/<config name>)")
      ->check(kNotEmpty);
  app_->add_option("--export-weights", export_path_,
                   "Write all weights to this safetensors file at the end "
                   "(default: RUN_DIR/weights.safetensors)")
      ->check(kNotEmpty);
  auto* resume = app_->add_flag(
      "--resume", resume_, "Continue from the newest committed checkpoint in the run directory");
  auto* init_weights =
      app_->add_option("--init-weights", init_weights_.path,
                       "Start a new run from these weights (.safetensors, as --export-weights "
                       "and export write them); a run resumed by --resume-or-start does not read "
                       "them")
          ->check(kNotEmpty)
          ->excludes(resume);
  app_->add_option("--init-skip", init_weights_.skip,
                   "A tensor (layers.5.weight) or prefix (layers.5) of the model that keeps its "
                   "initialisation instead, e.g. a new head (repeatable)")
      ->check(kNotEmpty)
      ->needs(init_weights);
  app_->add_flag("--resume-or-start", resume_or_start_,
                 "Continue from the newest committed checkpoint if there is one, else start a "
                 "new run (for requeued batch jobs)")
      ->excludes(resume);
}

int TrainCommand::run(const comm::Communicator& world) {
  // First, so a stop request during start-up is not fatal: it is seen after the first step.
  const std::atomic<bool>* stop_requested = stop_on_signals();
  if (comm::Watchdog* watchdog = world.watchdog()) watchdog->set_stop_signal(stop_signal());
  const std::string run_dir = run_dir_.empty() ? default_run_dir(config_path_) : run_dir_;
  const std::string export_path =
      export_path_.empty() ? run_dir + "/weights.safetensors" : export_path_;
  train::RunOptions options{.run_dir = run_dir,
                            .export_weights = export_path,
                            .resume = resume_            ? train::ResumeMode::kRequired
                                      : resume_or_start_ ? train::ResumeMode::kIfPresent
                                                         : train::ResumeMode::kNever,
                            .settings = {},  // run_train_job records the resolved experiment
                            .progress = stdout,
                            .progress_in_place = progress_in_place(),
                            .stop_requested = stop_requested,
                            .kill_grace_s = mpirun_kill_grace_s()};
  const train::RunResult result =
      job::run_train_job({.config_path = config_path_,
                          .overrides = overrides_,
                          .run_dir = run_dir,
                          .export_path = export_path,
                          .init_weights = init_weights_,
                          .resuming = resume_ || resume_or_start_,
                          .stored_settings = resume_ || resume_or_start_},
                         std::move(options), world)
          .result;
  if (world.rank() == 0) {
    if (result.preempted) {
      spdlog::warn("stopped at step {} by a signal; checkpoint saved in {}; continue with --resume",
                   result.steps_done, run_dir);
    } else if (!result.already_finished) {
      if (!result.sample.empty()) std::printf("sample:\n%s\n", result.sample.c_str());
      if (result.final_bits_per_char && result.unigram_entropy_bits) {
        std::printf("validation: %.3f bits/char (unigram entropy %.3f bits/char)\n",
                    *result.final_bits_per_char, *result.unigram_entropy_bits);
      }
      if (result.final_bits_per_byte) {
        std::printf("validation: %.3f bits/byte (perplexity %.2f per token)\n",
                    *result.final_bits_per_byte, std::exp(result.final_eval_loss));
      }
      const std::string trained = result.steps_done == 0
                                      ? "no steps (train.steps: 0)"
                                      : fmt::format("train loss {:.4f}", result.final_train_loss);
      const std::string scores =
          result.final_bleu && result.final_chrf
              ? fmt::format(" | {0} BLEU {1:.2f} | {0} chrF2 {2:.2f}", result.held_out_split,
                            *result.final_bleu, *result.final_chrf)
              : std::string();
      const std::string accuracy =
          result.final_eval_accuracy ? fmt::format(" | {} accuracy {:.2f}%", result.held_out_split,
                                                   100.0 * *result.final_eval_accuracy)
                                     : std::string();
      std::printf("final: %s | %s loss %.4f%s%s | run dir %s\n", trained.c_str(),
                  result.held_out_split.c_str(), result.final_eval_loss, accuracy.c_str(),
                  scores.c_str(), run_dir.c_str());
    }
  }
  return 0;
}

}  // namespace mpipe::app
