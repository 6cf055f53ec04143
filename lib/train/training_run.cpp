// The training loop around Trainer::step, one named phase each: the step, the logging window,
// the checkpoint, the evaluation, the agreed stop; then the end of the run (final checkpoint
// first, evaluation, export, summary), which resuming a finished run redoes if its outputs are
// missing.
#include "train/training_run.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/safetensors.h"
#include "comm/agree.h"
#include "comm/watchdog.h"
#include "core/byte_format.h"
#include "core/counted.h"
#include "core/error.h"
#include "core/memory_account.h"
#include "core/system_memory.h"
#include "core/test_stop.h"
#include "data/dataset.h"
#include "log/metrics_writer.h"
#include "log/progress.h"
#include "plan/schedule.h"
#include "tokenize/tokenizer.h"
#include "train/eval_measures.h"
#include "train/flop_utilization.h"
#include "train/generator.h"
#include "train/init_weights.h"
#include "train/measured_balance.h"
#include "train/nonfinite_policy.h"
#include "train/rank_times.h"
#include "train/run_checkpoint.h"
#include "train/run_trace.h"
#include "train/trainer.h"
#include "train/translation_scores.h"
#include "train/weight_export.h"

namespace mpipe::train {
namespace {

using Clock = std::chrono::steady_clock;

// Parts of the run outside the layers, for the memory limit's message.
constexpr MemoryActivity kEvaluation = MemoryActivity::part("evaluation (outside the layers)");
constexpr MemoryActivity kCheckpoint = MemoryActivity::part("a checkpoint write");
constexpr MemoryActivity kExport = MemoryActivity::part("the weight export");

EvalReport evaluate(Trainer& trainer, int64_t step) {
  const MemoryActivityScope label(kEvaluation);
  return trainer.evaluate(step);
}

// The BLEU and the chrF of translation scores, when there are some.
std::optional<double> bleu_of(const std::optional<TranslationScores>& scores) {
  return scores ? std::optional(scores->bleu) : std::nullopt;
}
std::optional<double> chrf_of(const std::optional<TranslationScores>& scores) {
  return scores ? std::optional(scores->chrf) : std::nullopt;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The mean training loss over the steps of one logging window (finite steps only).
class LossWindow {
 public:
  void add(double loss) {
    sum_ += loss;
    ++count_;
  }
  // NaN for a window without a finite step (written as null).
  double mean() const {
    return count_ > 0 ? sum_ / static_cast<double>(count_)
                      : std::numeric_limits<double>::quiet_NaN();
  }

 private:
  double sum_ = 0.0;
  int64_t count_ = 0;
};

// log.level: debug: where this rank's step time went, so a slow rank shows.
void log_step_times(const StepReport& report, int64_t step, const comm::Topology& topo) {
  spdlog::debug(
      "step {} pipeline rank {} replica {}: compute {:.2f} ms | waiting {:.2f} ms | "
      "sending {:.2f} ms | allreduce {:.2f} ms | step {:.2f} ms",
      step + 1, topo.pipeline_rank, topo.replica, 1e3 * report.times.compute_s,
      1e3 * report.times.wait_s, 1e3 * report.times.send_s, 1e3 * report.allreduce_s,
      1e3 * report.step_s);
}

// Measured memory per rank of the first replica (all its chunks), in rank order.
struct RankMemoryUse {
  std::vector<double> activation_bytes;  // the peak of activations stored between F and B
  std::vector<double> tensor_bytes;      // the peak of tensor storage (MemoryAccount)
  std::vector<double> rss_bytes;         // the process's peak resident set
};

// The summary.json of a finished run: results, speed, and memory measured next to the
// planner's prediction.
nlohmann::json make_summary(const config::Experiment& experiment, const Trainer& trainer,
                            const RunResult& result, int64_t steps_run, double wall_s,
                            const RankMemoryUse& measured, const log::RankTimes& times,
                            const StepFlops& flops, const WorldPeak& peak) {
  const comm::Topology& topo = trainer.topology();
  // Per rank, as measured: the sum over its chunks' stages.
  const auto ranks = static_cast<size_t>(topo.num_pipeline_ranks);
  std::vector<double> predicted_kept(ranks, 0.0), predicted_sent(ranks, 0.0);
  const std::vector<plan::StagePlan>& stages = trainer.pipeline_plan().stages;
  for (size_t s = 0; s < stages.size(); ++s) {
    const int rank = trainer.placement().rank_of(static_cast<int>(s));
    predicted_kept[static_cast<size_t>(rank)] += stages[s].memory.kept_activations;
    predicted_sent[static_cast<size_t>(rank)] += stages[s].sent_bytes;
  }
  // The run's predicted peak per rank: training's, or its evaluations' where larger (the
  // measured high-water mark covers both).
  std::vector<double> predicted_peak = trainer.pipeline_plan().rank_peak_bytes;
  const std::vector<double>& evaluation = trainer.pipeline_plan().rank_evaluation_peak_bytes;
  for (size_t rank = 0; rank < evaluation.size() && rank < predicted_peak.size(); ++rank) {
    predicted_peak[rank] = std::max(predicted_peak[rank], evaluation[rank]);
  }
  nlohmann::json summary = {
      {"steps", result.steps_done},
      {"final_train_loss", result.final_train_loss},
      {"final_eval_loss", result.final_eval_loss},
      {"wall_time_s", wall_s},
      // null when no step ran (a finished run whose outputs a resume wrote)
      {"samples_per_s",
       steps_run > 0
           ? nlohmann::json(static_cast<double>(steps_run * experiment.train.batch_size) / wall_s)
           : nlohmann::json(nullptr)},
      {"stages", topo.num_pipeline_ranks},
      {"virtual_stages", trainer.num_chunks()},
      {"data_parallel", topo.num_replicas},
      {"micro_batches", experiment.pipeline.micro_batches},
      {"schedule", plan::to_string(trainer.pipeline_plan().schedule)},
      {"predicted_samples_per_s", trainer.pipeline_plan().samples_per_s},
      {"peak_activation_bytes_per_rank", measured.activation_bytes},
      {"predicted_kept_activation_bytes_per_rank", predicted_kept},
      {"peak_tensor_bytes_per_rank", measured.tensor_bytes},
      {"peak_rss_bytes_per_rank", measured.rss_bytes},
      {"predicted_peak_bytes_per_rank", predicted_peak},
      {"predicted_sent_bytes_per_step_per_rank", predicted_sent},
  };
  // A classifying loss's only (a regression has no accuracy).
  if (result.final_eval_accuracy) summary["final_eval_accuracy"] = *result.final_eval_accuracy;
  // MFU over the run's wall time, as samples_per_s; null when no step ran.
  const log::FlopUtilization utilization =
      flop_utilization(flops, peak, static_cast<double>(steps_run), wall_s);
  summary["mfu"] = std::isfinite(utilization.mfu) ? nlohmann::json(utilization.mfu) : nullptr;
  summary["hfu"] = std::isfinite(utilization.hfu) ? nlohmann::json(utilization.hfu) : nullptr;
  summary["peak_flops_per_s"] = peak.flops_per_s > 0 ? nlohmann::json(peak.flops_per_s) : nullptr;
  summary["model_flops_per_step"] = flops.model;
  nlohmann::ordered_json rank_times;
  times.write_into(rank_times);
  // The memory measured at the end (above) is the run's: the windows' high-water marks are not
  // copied over it.
  for (const auto& [key, value] : rank_times.items()) {
    if (!summary.contains(key)) summary[key] = value;
  }
  if (result.final_bits_per_char && result.unigram_entropy_bits) {
    summary["final_eval_bits_per_char"] = *result.final_bits_per_char;
    summary["unigram_entropy_bits"] = *result.unigram_entropy_bits;
  }
  if (result.final_bits_per_byte) {
    summary["final_eval_bits_per_byte"] = *result.final_bits_per_byte;
    summary["final_eval_perplexity"] = std::exp(result.final_eval_loss);
  }
  if (result.final_bleu && result.final_chrf) {
    summary["final_eval_bleu"] = *result.final_bleu;
    summary["final_eval_chrf"] = *result.final_chrf;
  }
  log::add_deprecated_stage_keys(summary);
  return summary;
}

// Collective: each pipeline rank's measured memory (replica 0's ranks come first in world rank
// order).
// `tensor_peak`: this rank's high-water mark of tensor bytes.
RankMemoryUse measure_memory(Trainer& trainer, const comm::Communicator& world,
                             int64_t tensor_peak) {
  double stored = 0.0;  // each chunk's peak: their sum bounds the rank's
  for (int chunk = 0; chunk < trainer.num_chunks(); ++chunk) {
    stored += static_cast<double>(trainer.stage(chunk).peak_stored_bytes());
  }
  const double mine[3] = {stored, static_cast<double>(tensor_peak),
                          static_cast<double>(peak_rss_bytes())};
  const std::vector<double> all = world.allgatherv(std::span<const double>(mine, 3));
  RankMemoryUse use;
  for (int r = 0; r < trainer.topology().num_pipeline_ranks; ++r) {
    use.activation_bytes.push_back(all[3 * static_cast<size_t>(r)]);
    use.tensor_bytes.push_back(all[3 * static_cast<size_t>(r) + 1]);
    use.rss_bytes.push_back(all[3 * static_cast<size_t>(r) + 2]);
  }
  return use;
}

// pipeline.memory_limit for tensor storage on this rank (none when 0), named as in its messages.
MemoryLimitScope memory_limit(const config::Experiment& experiment, const comm::Topology& topo,
                              int world_rank) {
  const int64_t limit = experiment.pipeline.memory_limit;
  const auto ref = experiment.refs.find("pipeline.memory_limit");
  const std::string where =
      ref != experiment.refs.end() ? ref->second.location() : experiment.source;
  return MemoryLimitScope(limit,
                          fmt::format("rank {} (pipeline rank {})", world_rank, topo.pipeline_rank),
                          fmt::format("pipeline.memory_limit is {} ({})",
                                      format_bytes(static_cast<double>(limit), 2), where));
}

// Which end-of-run outputs a finished run lacks, as said in the log: "summary.json", "the
// export w.safetensors"; empty when it has them all.
std::vector<std::string> missing_outputs(const RunOptions& options) {
  std::vector<std::string> missing;
  if (!std::filesystem::exists(log::MetricsWriter(options.run_dir).summary_path())) {
    missing.emplace_back("summary.json");
  }
  if (!options.export_weights.empty() && !std::filesystem::exists(options.export_weights)) {
    missing.push_back(fmt::format("the export {}", options.export_weights));
  }
  return missing;
}

// One run on this rank: its phases are the methods, collective over the world where they say.
class TrainingRun {
 public:
  TrainingRun(const config::Experiment& experiment, const data::Dataset& dataset, RunPlan plan,
              const RunOptions& options, const comm::Communicator& world,
              kernels::KernelContext& kernels)
      : experiment_(experiment),
        dataset_(dataset),
        options_(options),
        world_(world),
        kernels_(kernels),
        is_root_(world.rank() == 0),
        trainer_(experiment, std::move(plan), world, kernels, dataset),
        limit_(memory_limit(experiment, trainer_.topology(), world.rank())),
        checkpoints_(trainer_, experiment, options, world),
        balance_(experiment, trainer_, world),
        nonfinite_(experiment.train) {}

  RunResult run() {
    announce();
    const ResumePoint resumed = checkpoints_.resume();
    saved_step_ = resumed.step;
    if (resumed.finished) return complete_finished_run(resumed.step);
    start_from_init_weights(resumed.step);
    first_step_ = resumed.step;
    balance_.start_at(first_step_);
    trace_.emplace(experiment_.log.trace_steps, first_step_, world_, trainer_.topology(),
                   trainer_.placement(), trainer_.trace());
    // Before the clocks start: the measurement's time is not the run's.
    if (first_step_ < experiment_.train.steps) measure_peak();
    open_outputs();
    if (is_root_ && options_.progress) {
      progress_.emplace(options_.progress, options_.progress_in_place, experiment_.train.steps,
                        first_step_, options_.progress_label);
    }
    int64_t step = first_step_;
    bool stopped = false;
    while (step < experiment_.train.steps && !stopped) {
      // The step's waits (and its logging and stop check) get comm.timeout; the evaluations and
      // checkpoints inside take their own, longer deadline.
      const comm::WatchScope watch(world_, fmt::format("step {}", step + 1),
                                   comm::WaitPhase::kStep);
      const std::string step_name = fmt::format("step {} (outside the layers)", step + 1);
      const MemoryActivity step_activity = MemoryActivity::part(step_name);
      const MemoryActivityScope label(step_activity);
      const StepReport report = train_step(step);
      const int64_t done = ++step;
      log_window(done, report);
      balance_.after_step(done);
      checkpoints_.poll_copies();
      checkpoint_if_due(done);
      evaluate_if_due(done);
      stopped = agreed_stop(done);
      write_trace_if_due(done, stopped);
    }
    if (progress_) progress_->finish();
    if (!stopped) return end_of_run(step);
    RunResult result;
    result.steps_done = step;
    result.preempted = true;
    result.final_train_loss = train_loss_;
    return result;
  }

 private:
  // rank 0: what runs, in one line.
  void announce() const {
    if (!is_root_) return;
    const comm::Topology& topo = trainer_.topology();
    spdlog::info(
        "{}: {}, {} parameters, {} x {}, {} of {}, {}", experiment_.source,
        counted(std::ssize(trainer_.plan().layers), "layer"), trainer_.plan().num_params(),
        counted(topo.num_pipeline_ranks, "stage"), counted(topo.num_replicas, "replica"),
        counted(experiment_.pipeline.micro_batches, "micro-batch", "micro-batches"),
        experiment_.train.batch_size / topo.num_replicas / experiment_.pipeline.micro_batches,
        kernels::to_string(kernels_.precision()));
    const plan::PipelinePlan& plan = trainer_.pipeline_plan();
    if (experiment_.pipeline.schedule == plan::ScheduleKind::kAuto) {
      spdlog::info(
          "pipeline.schedule: auto chose {} (predicted step {:.3f} s, bubble {:.1f}%, the fastest "
          "of {} within the memory limit)",
          plan::to_string(plan.schedule), plan.step_s, 100.0 * plan.bubble_fraction,
          counted(std::ssize(plan.candidates), "schedule"));
    }
  }

  // --init-weights: a new run's stages take their weights from the file (a failure on any rank
  // is agreed); a resumed run has its weights from its checkpoint, and the file is not read.
  void start_from_init_weights(int64_t resumed_step) {
    const InitWeights& init = options_.init_weights;
    if (init.path.empty()) return;
    if (resumed_step > 0) {
      if (is_root_) {
        spdlog::info(
            "not reading --init-weights {}: the run resumes from its checkpoint of step {}",
            init.path, resumed_step);
      }
      return;
    }
    comm::agree(world_, [&] {
      for (int chunk = 0; chunk < trainer_.num_chunks(); ++chunk) {
        load_init_weights(trainer_.stage(chunk), init, trainer_.tied());
      }
    });
    if (is_root_) {
      spdlog::info("started from the weights in {}{}", init.path,
                   init.skip.empty() ? ""
                                     : fmt::format(" (kept at their initialisation: {})",
                                                   fmt::join(init.skip, ", ")));
    }
  }

  // Collective: the ranks' peak FLOP/s for the MFU (flop_utilization.h), said once by rank 0.
  void measure_peak() {
    peak_ = world_peak(experiment_.log, kernels_, world_);
    if (is_root_) {
      spdlog::info("{}",
                   describe_peak(peak_, step_flops_, kernels::to_string(kernels_.precision())));
    }
  }

  // The clocks, the text baseline and metrics.jsonl, before the first step (or the end).
  void open_outputs() {
    start_ = window_start_ = Clock::now();
    text_baseline_ = dataset_.text_baseline_bits();
    if (is_root_ && text_baseline_) {
      spdlog::info("validation text: unigram entropy {:.3f} bits/char (a model must beat this)",
                   *text_baseline_);
    }
    if (is_root_) {
      metrics_.emplace(options_.run_dir, experiment_.log.tensorboard);
      recoveries_ = metrics_->recoveries();  // mpipe supervise's, before this relaunch
      widenings_ = metrics_->widenings();
    }
  }

  // The step phase: Trainer::step and what it reports (throws when a non-finite step must stop
  // the run).
  StepReport train_step(int64_t step) {
    trace_->before_step(step + 1);
    StepReport report = trainer_.step(step);
    if (spdlog::should_log(spdlog::level::debug)) log_step_times(report, step, trainer_.topology());
    nonfinite_.record(report, is_root_);
    warn_if_longer_than_kill_grace(step, report.step_s);
    if (report.finite) window_.add(report.loss);
    ++window_steps_;
    window_times_.add(report);
    return report;
  }

  // RunOptions::kill_grace_s: rank 0 says once that a SIGTERM to mpirun would lose this run's
  // progress since its last checkpoint (the first step, with its one-time set-up, is not judged).
  void warn_if_longer_than_kill_grace(int64_t step, double step_s) {
    const std::optional<double>& grace_s = options_.kill_grace_s;
    if (!is_root_ || kill_grace_warned_ || !grace_s || step == first_step_ || step_s <= *grace_s) {
      return;
    }
    kill_grace_warned_ = true;
    spdlog::warn(
        "step {} took {:.1f} s, more than the {:.0f} s mpirun leaves the ranks between its SIGTERM "
        "and its SIGKILL (odls_base_sigkill_timeout): a SIGTERM or Ctrl-C to mpirun would end "
        "the job without a checkpoint; stop it with SIGUSR1 (kill -USR1 <mpirun pid>), or set "
        "OMPI_MCA_odls_base_sigkill_timeout above a step and a checkpoint (scripts/mpi_env.sh "
        "sets 10; docs/signals.md)",
        step + 1, step_s, *grace_s);
  }

  // The logging window: at every log.every steps and the last, rank 0 writes the window's mean
  // loss to metrics.jsonl and the progress line (a full disk stops every rank with its message).
  void log_window(int64_t done, const StepReport& report) {
    const auto& train = experiment_.train;
    if (done % experiment_.log.every != 0 && done != train.steps) return;
    const double window_s = seconds_since(window_start_);
    const double samples_per_s = static_cast<double>(window_steps_ * train.batch_size) / window_s;
    train_loss_ = window_.mean();
    const log::RankTimes rank_times = window_times_.per_rank(world_, trainer_.topology());
    const log::FlopUtilization utilization =
        flop_utilization(step_flops_, peak_, static_cast<double>(window_steps_), window_s);
    // The summary's times leave out the first window (warm-up) when there are others.
    (first_window_times_.steps() == 0 ? first_window_times_ : later_times_).add(window_times_);
    window_times_ = {};
    // Token data: each example's inputs are token ids.
    const double tokens_per_example =
        dataset_.input_vocab() > 0 ? static_cast<double>(dataset_.input_shape().numel()) : 0.0;
    comm::agree(world_, [&] {
      if (!is_root_) return;
      metrics_->train(done, train_loss_, report.lr, samples_per_s, nonfinite_.total(), rank_times,
                      utilization);
      const log::ProgressRecord record{
          .step = done,
          .loss = train_loss_,
          .lr = report.lr,
          .samples_per_s = samples_per_s,
          .seconds_per_step = window_s / static_cast<double>(window_steps_),
          .tokens_per_s = samples_per_s * tokens_per_example,
          .mfu = utilization.mfu,
          .elapsed_s = seconds_since(start_),
          .recoveries = recoveries_,
          .widenings = widenings_};
      if (progress_) progress_->update(record);
      if (options_.on_progress) {
        options_.on_progress(record, log::estimate_eta_s(record, train.steps, first_step_));
      }
    });
    window_start_ = Clock::now();
    window_steps_ = 0;
    window_ = {};
  }

  // The checkpoint phase: at every checkpoint.every steps, before that step's evaluation; its peer
  // copies overlap the steps that follow (RunCheckpoints::poll_copies commits it), but the last
  // step's.
  void checkpoint_if_due(int64_t done) {
    const int64_t every = experiment_.checkpoint.every;
    if (every > 0 && done % every == 0) save(done, /*overlap=*/done < experiment_.train.steps);
  }

  // Saves the state after `done` steps (once); unless `overlap`, it is committed on return (the
  // copies of a checkpoint saved before waited for).
  void save(int64_t done, bool overlap = false) {
    if (saved_step_ != done) {
      const MemoryActivityScope label(kCheckpoint);
      const log::TraceScope traced(trainer_.trace(), log::TraceKind::kCheckpoint);
      checkpoints_.save(done, overlap);
      saved_step_ = done;
    }
    if (!overlap) checkpoints_.wait_for_copies();
  }

  // The evaluation phase: at every train.eval_every steps but the last (the end of the run
  // evaluates that one), with a translation model's BLEU and chrF.
  void evaluate_if_due(int64_t done) {
    const auto& train = experiment_.train;
    if (train.eval_every <= 0 || done % train.eval_every != 0 || done == train.steps) return;
    std::optional<TranslationScores> scores;
    const EvalReport eval = [&] {
      const log::TraceScope traced(trainer_.trace(), log::TraceKind::kEvaluation);
      EvalReport report = evaluate(trainer_, done - 1);
      // Rank 0's decoding is outside the planner's prediction, as the export is: the high-water
      // mark that summary.json compares with it leaves the decoding's model out.
      const int64_t peak = MemoryAccount::process().peak_bytes();
      scores = score_translations(trainer_, experiment_, dataset_, data::Split::kTest);
      MemoryAccount::process().restore_peak(peak);
      return report;
    }();
    comm::agree(world_, [&] {
      if (!is_root_) return;
      const EvalMeasures measures = eval_measures(dataset_, data::Split::kTest, eval);
      metrics_->eval(done, split_name(), eval.loss, eval.accuracy, measures.bits_per_char,
                     measures.bits_per_byte, measures.perplexity, bleu_of(scores), chrf_of(scores));
      if (progress_) progress_->finish();  // an in-place progress line ends before this one
      spdlog::info("{}", log::format_evaluation({.step = done,
                                                 .split = split_name(),
                                                 .loss = eval.loss,
                                                 .accuracy = eval.accuracy,
                                                 .bits_per_char = measures.bits_per_char,
                                                 .unigram_entropy_bits = text_baseline_,
                                                 .bits_per_byte = measures.bits_per_byte,
                                                 .perplexity = measures.perplexity,
                                                 .bleu = bleu_of(scores),
                                                 .chrf = chrf_of(scores)}));
    });
  }

  // log.trace_steps: after the last traced step (or a stop after some were recorded), rank 0
  // writes every rank's timeline into trace.json (a diagnostic: one it cannot write is a warning).
  void write_trace_if_due(int64_t done, bool stopping) {
    if (!trace_->due(done, stopping)) return;
    const nlohmann::json trace = trace_->merge();
    comm::agree(world_, [&] {
      if (!is_root_) return;
      if (metrics_->write_trace(trace)) spdlog::info("wrote {}", metrics_->trace_path());
    });
  }

  // The agreed stop: when any rank was asked to stop (a signal, `mpipe cancel`), every rank
  // commits the state after `done` steps and stops here, together.
  bool agreed_stop(int64_t done) {
    const bool stop = (options_.stop_requested && options_.stop_requested->load()) ||
                      (options_.cancel_requested && options_.cancel_requested());
    if (world_.all_true(!stop)) return false;
    save(done);
    return true;
  }

  // The end of a run after `step` steps: the trained state is committed first, so that an
  // evaluation or export that fails (over pipeline.memory_limit, a full disk) loses no step and a
  // resume redoes only what follows; then the final evaluation, a translation model's scores (after
  // the memory high-water mark is read: like the export, outside the planner's prediction), the
  // export (and a text model's sample), and metrics.jsonl's last record with summary.json, written
  // last.
  RunResult end_of_run(int64_t step) {
    const double wall_s = seconds_since(start_);
    save(step);
    RunResult result;
    result.steps_done = step;
    result.final_train_loss = train_loss_;
    test_stop_at(TestMoment::kEvaluation, step);
    const EvalReport eval = evaluate(trainer_, step);
    result.final_eval_loss = eval.loss;
    result.final_eval_accuracy = eval.accuracy;
    result.held_out_split = split_name();
    result.unigram_entropy_bits = text_baseline_;
    // The high-water mark of training, evaluation and checkpoints (what the model predicts); the
    // translation scores and the export after it (streamed tensor by tensor to rank 0) are not
    // part of the prediction.
    const int64_t tensor_peak = MemoryAccount::process().peak_bytes();
    const std::optional<TranslationScores> scores =
        score_translations(trainer_, experiment_, dataset_, data::Split::kTest);
    result.final_bleu = bleu_of(scores);
    result.final_chrf = chrf_of(scores);
    if (!options_.export_weights.empty()) {
      const MemoryActivityScope label(kExport);
      export_weights(trainer_, experiment_, dataset_, options_.export_weights);
      // A language model's (translation pairs have a tokenizer too, but `mpipe translate`).
      const bool samples_text =
          text_baseline_ || (experiment_.data.kind == data::DatasetKind::kTokens &&
                             !experiment_.data.tokenizer.empty());
      if (is_root_ && samples_text && options_.sample_length > 0) result.sample = sample_text();
    }
    const RankMemoryUse use = measure_memory(trainer_, world_, tensor_peak);
    const log::RankTimes rank_times =
        (later_times_.steps() > 0 ? later_times_ : first_window_times_)
            .per_rank(world_, trainer_.topology());
    comm::agree(world_, [&] {
      if (!is_root_) return;
      const EvalMeasures measures = eval_measures(dataset_, data::Split::kTest, eval);
      result.final_bits_per_char = measures.bits_per_char;
      result.final_bits_per_byte = measures.bits_per_byte;
      metrics_->eval(step, split_name(), eval.loss, eval.accuracy, measures.bits_per_char,
                     measures.bits_per_byte, measures.perplexity, result.final_bleu,
                     result.final_chrf);
      nlohmann::json summary = make_summary(experiment_, trainer_, result, step - first_step_,
                                            wall_s, use, rank_times, step_flops_, peak_);
      summary["partition_history"] = balance_.history();
      metrics_->write_summary(summary);
    });
    return result;
  }

  // What the evaluations' split is called: "val" or "test" (data::held_out_split_name).
  std::string split_name() const {
    return std::string(data::held_out_split_name(experiment_.data.kind));
  }

  // Rank 0: text generated from the exported weights: bytes, or tokens of data.tokenizer.
  std::string sample_text() {
    std::optional<tokenize::Tokenizer> tokenizer;
    if (!experiment_.data.tokenizer.empty()) {
      tokenizer = tokenize::Tokenizer::load(experiment_.data.tokenizer);
    }
    return generate_text(experiment_.model, experiment_.data.seq_len,
                         checkpoint::read_safetensors(options_.export_weights).tensors,
                         options_.export_weights,
                         {.prompt = "\n",
                          .length = options_.sample_length,
                          .sampling = {},
                          .seed = experiment_.train.seed},
                         kernels_, tokenizer ? &*tokenizer : nullptr);
  }

  // A run resumed at train.steps or later: nothing to train. When its end (summary.json, the
  // export) is missing (an export that failed, say), the end is done again from the checkpoint.
  RunResult complete_finished_run(int64_t step) {
    std::vector<std::string> missing;
    double train_loss = std::numeric_limits<double>::quiet_NaN();
    comm::agree(world_, [&] {
      if (!is_root_) return;
      missing = missing_outputs(options_);
      if (!missing.empty()) train_loss = log::MetricsWriter(options_.run_dir).last_train_loss();
    });
    double facts[2] = {static_cast<double>(missing.size()), train_loss};
    world_.broadcast(std::span<double>(facts, 2), 0);
    if (facts[0] == 0) {
      if (is_root_) {
        spdlog::info("{}: already finished at step {} (train.steps = {}); nothing to do",
                     options_.run_dir, step, experiment_.train.steps);
      }
      RunResult result;
      result.steps_done = step;
      result.already_finished = true;
      return result;
    }
    if (is_root_) {
      spdlog::info("{}: finished at step {} but {} missing: writing {} from its checkpoint",
                   options_.run_dir, step, fmt::join(missing, " and "),
                   missing.size() == 1 ? "it" : "them");
    }
    checkpoints_.load(step);
    first_step_ = step;
    train_loss_ = facts[1];
    open_outputs();
    return end_of_run(step);
  }

  const config::Experiment& experiment_;
  const data::Dataset& dataset_;
  const RunOptions& options_;
  const comm::Communicator& world_;
  kernels::KernelContext& kernels_;
  const bool is_root_;
  Trainer trainer_;
  // The preflight refused a partition predicted over the limit; this catches what the model
  // does not cover (the export, evaluation beyond its estimate), on the rank where it happens.
  const MemoryLimitScope limit_;
  RunCheckpoints checkpoints_;
  MeasuredBalance balance_;  // pipeline.balance: measured
  NonFiniteSteps nonfinite_;
  int64_t first_step_ = 0;
  int64_t recoveries_ = 0;          // rank 0: the supervisor's recoveries in metrics.jsonl
  int64_t widenings_ = 0;           // rank 0: and its widenings
  bool kill_grace_warned_ = false;  // warn_if_longer_than_kill_grace said it
  // The newest step whose state is saved: committed, or its peer copies in flight (at a fresh
  // run's step 0: the seed's, which needs no checkpoint).
  int64_t saved_step_ = 0;
  std::optional<double> text_baseline_;        // Dataset::text_baseline_bits
  std::optional<log::MetricsWriter> metrics_;  // rank 0
  std::optional<log::ProgressLine> progress_;  // rank 0, when options.progress is set
  std::optional<RunTrace> trace_;              // log.trace_steps (set up once resumed)
  Clock::time_point start_, window_start_;
  int64_t window_steps_ = 0;
  LossWindow window_;
  StepTimeTotals window_times_;        // this rank's, in the logging window
  StepTimeTotals first_window_times_;  // this run's first logging window
  StepTimeTotals later_times_;         // the windows after it
  // The model's FLOPs per step (the planner's) and the ranks' peak, measured before the first step.
  const StepFlops step_flops_ =
      step_flops(trainer_.pipeline_plan(), trainer_.topology().num_replicas);
  WorldPeak peak_;
  double train_loss_ = std::numeric_limits<double>::quiet_NaN();  // the last window's mean
};

}  // namespace

RunResult run_training(const config::Experiment& experiment, const data::Dataset& dataset,
                       RunPlan plan, const RunOptions& options, const comm::Communicator& world,
                       kernels::KernelContext& kernels) {
  MemoryAccount::process().reset_peak();  // this run's high-water mark, from its parameters on
  return TrainingRun(experiment, dataset, std::move(plan), options, world, kernels).run();
}

}  // namespace mpipe::train
