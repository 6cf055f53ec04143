// A whole training run: resume, the step loop with progress, metrics, checkpoints, evaluation
// and preemption, then the final checkpoint, evaluation, weight export and summary.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "comm/topology.h"
#include "config/experiment.h"
#include "data/dataset.h"
#include "kernels/context.h"
#include "log/progress.h"
#include "train/init_weights.h"
#include "train/pipeline_plan.h"

namespace mpipe::train {

// What --resume asked for.
enum class ResumeMode {
  kNever,      // a fresh run (the run directory must not hold one)
  kRequired,   // --resume: continue the newest committed checkpoint; an error if there is none
  kIfPresent,  // --resume-or-start: continue it if there is one, else start (and say so)
};

struct RunOptions {
  std::string run_dir;         // metrics.jsonl, summary.json, checkpoints/
  std::string export_weights;  // safetensors path written at the end; empty = none
  // A new run (not a resumed one) starts from these weights; checked at preflight.
  InitWeights init_weights = {};
  int64_t sample_length = 300;  // text data: bytes (or data.tokenizer's tokens) sampled at the end
  ResumeMode resume = ResumeMode::kNever;
  // Every resolved setting ("optimizer.lr" -> "0.001": config::resolved_settings), recorded in
  // each checkpoint and compared on resume.
  std::map<std::string, std::string> settings;
  std::FILE* progress = nullptr;   // where rank 0 prints progress (stdout from main); null = none
  bool progress_in_place = false;  // rewrite one line ('\r') instead of printing one per update
  // Put before each progress line ("NAME: step ..."): the daemon's experiment. Empty = none.
  std::string progress_label = {};
  // Set (e.g. by a SIGTERM handler) to stop at the next step boundary with a checkpoint.
  const std::atomic<bool>* stop_requested = nullptr;
  // Under mpirun: the seconds it leaves the ranks between its SIGTERM and its SIGKILL. Rank 0
  // warns once when a step (after the first) takes longer, since a SIGTERM or Ctrl-C to mpirun
  // would then end the job without a checkpoint. Empty = no such launcher (srun, one process).
  std::optional<double> kill_grace_s = std::nullopt;
  // Asked at every step boundary; true stops the run like stop_requested (the daemon's rank 0:
  // `mpipe cancel`). Empty = never.
  std::function<bool()> cancel_requested = {};
  // Rank 0, after every logged step: its record and the ETA (the daemon's status file).
  std::function<void(const log::ProgressRecord&, std::optional<double> eta_s)> on_progress = {};
  // Called by job::run_train_job once preflight has planned the experiment for the world, with
  // the layout it was given (the daemon's rank 0 records it). Empty = none.
  std::function<void(const config::Experiment&, const comm::Topology&)> on_planned = {};
};

struct RunResult {
  int64_t steps_done = 0;  // the step count reached (== train.steps unless preempted)
  bool preempted = false;
  // Resumed at train.steps or later with summary.json and the export present: nothing was run
  // or written. (One without them writes them, and returns the results as a finished run.)
  bool already_finished = false;
  double final_train_loss = std::numeric_limits<double>::quiet_NaN();  // last window mean
  double final_eval_loss = 0.0;
  std::optional<double> final_eval_accuracy;   // a classifying loss's only
  std::string held_out_split;                  // what the evaluations' split is: "val", "test"
  std::optional<double> final_bits_per_char;   // text datasets (rank 0 only)
  std::optional<double> unigram_entropy_bits;  // text datasets: validation split
  std::optional<double> final_bits_per_byte;   // tokenized text with a tokenizer (rank 0 only)
  // Translation pairs with train.eval_bleu_sentences > 0: BLEU and chrF2 of greedy translations
  // of the held-out split's first pairs (train/translation_scores.h).
  std::optional<double> final_bleu;
  std::optional<double> final_chrf;
  std::string sample;  // text data: text generated from the final weights (rank 0 only)
};

// Collective over `world`; every rank returns the same result.
// `plan`: the preflight's for this world (job/preflight.h).
RunResult run_training(const config::Experiment& experiment, const data::Dataset& dataset,
                       RunPlan plan, const RunOptions& options, const comm::Communicator& world,
                       kernels::KernelContext& kernels);

}  // namespace mpipe::train
