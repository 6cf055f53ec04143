// The training loop around Trainer::step: logging, evaluation, checkpoints, resume, export.
#include "train/training_run.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>

#include "checkpoint/safetensors.h"
#include "comm/agree.h"
#include "comm/watchdog.h"
#include "core/byte_format.h"
#include "core/counted.h"
#include "core/error.h"
#include "core/memory_account.h"
#include "core/system_memory.h"
#include "data/dataset.h"
#include "data/text_corpus.h"
#include "log/metrics_writer.h"
#include "log/progress.h"
#include "train/generator.h"
#include "train/nonfinite_policy.h"
#include "train/run_checkpoint.h"
#include "train/trainer.h"
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

void save(RunCheckpoints& checkpoints, int64_t step) {
  const MemoryActivityScope label(kCheckpoint);
  checkpoints.save(step);
}

// Bits per character of a text model's loss (nats per byte); empty for other datasets.
std::optional<double> bits_per_char(const config::Experiment& experiment, double loss) {
  if (experiment.data.kind != data::DatasetKind::kText) return std::nullopt;
  return loss / std::numbers::ln2;
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

// log.level: debug: where this rank's step time went, so a slow stage shows.
void log_step_times(const StepReport& report, int64_t step, const comm::Topology& topo) {
  spdlog::debug(
      "step {} stage {} replica {}: compute {:.2f} ms | waiting {:.2f} ms | sending {:.2f} ms | "
      "allreduce {:.2f} ms | step {:.2f} ms",
      step + 1, topo.stage, topo.replica, 1e3 * report.times.compute_s, 1e3 * report.times.wait_s,
      1e3 * report.times.send_s, 1e3 * report.allreduce_s, 1e3 * report.step_s);
}

// The summary.json of a finished run.
// Measured memory per stage of the first replica, in stage order.
struct StageMemoryUse {
  std::vector<double> activation_bytes;  // the peak of activations stored between F and B
  std::vector<double> tensor_bytes;      // the peak of tensor storage (MemoryAccount)
  std::vector<double> rss_bytes;         // the process's peak resident set
};

// The summary.json of a finished run: results, speed, and memory measured next to the
// planner's prediction.
nlohmann::json make_summary(const config::Experiment& experiment, const Trainer& trainer,
                            const RunResult& result, int64_t steps_run, double wall_s,
                            const StageMemoryUse& measured) {
  const comm::Topology& topo = trainer.topology();
  std::vector<double> predicted_kept, predicted_peak;
  for (const pipeline::StagePlan& stage : trainer.pipeline_plan().stages) {
    predicted_kept.push_back(stage.memory.kept_activations);
    predicted_peak.push_back(stage.memory.total());
  }
  nlohmann::json summary = {
      {"steps", result.steps_done},
      {"final_train_loss", result.final_train_loss},
      {"final_eval_loss", result.final_eval_loss},
      {"final_eval_accuracy", result.final_eval_accuracy},
      {"wall_time_s", wall_s},
      {"samples_per_s", static_cast<double>(steps_run * experiment.train.batch_size) / wall_s},
      {"stages", topo.num_stages},
      {"data_parallel", topo.num_replicas},
      {"micro_batches", experiment.pipeline.micro_batches},
      {"predicted_samples_per_s", trainer.pipeline_plan().samples_per_s},
      {"peak_activation_bytes_per_stage", measured.activation_bytes},
      {"predicted_kept_activation_bytes_per_stage", predicted_kept},
      {"peak_tensor_bytes_per_stage", measured.tensor_bytes},
      {"peak_rss_bytes_per_stage", measured.rss_bytes},
      {"predicted_peak_bytes_per_stage", predicted_peak},
  };
  if (result.final_bits_per_char && result.unigram_entropy_bits) {
    summary["final_eval_bits_per_char"] = *result.final_bits_per_char;
    summary["unigram_entropy_bits"] = *result.unigram_entropy_bits;
  }
  return summary;
}

// Collective: each stage's measured memory (replica 0's stages come first in world rank order).
// `tensor_peak`: this rank's high-water mark of tensor bytes.
StageMemoryUse measure_memory(Trainer& trainer, const comm::Communicator& world,
                              int64_t tensor_peak) {
  const double mine[3] = {static_cast<double>(trainer.stage().peak_stored_bytes()),
                          static_cast<double>(tensor_peak), static_cast<double>(peak_rss_bytes())};
  const std::vector<double> all = world.allgatherv(std::span<const double>(mine, 3));
  StageMemoryUse use;
  for (int s = 0; s < trainer.topology().num_stages; ++s) {
    use.activation_bytes.push_back(all[3 * static_cast<size_t>(s)]);
    use.tensor_bytes.push_back(all[3 * static_cast<size_t>(s) + 1]);
    use.rss_bytes.push_back(all[3 * static_cast<size_t>(s) + 2]);
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
  return MemoryLimitScope(limit, fmt::format("rank {} (stage {})", world_rank, topo.stage),
                          fmt::format("pipeline.memory_limit is {} ({})",
                                      format_bytes(static_cast<double>(limit), 2), where));
}

}  // namespace

RunResult run_training(const config::Experiment& experiment, const data::Dataset& dataset,
                       const RunOptions& options, const comm::Communicator& world,
                       kernels::KernelContext& kernels) {
  const auto& train = experiment.train;
  const bool is_root = world.rank() == 0;
  MemoryAccount& memory = MemoryAccount::process();
  memory.reset_peak();  // this run's high-water mark, from its parameters on
  Trainer trainer(experiment, world, kernels, dataset);
  const auto& topo = trainer.topology();
  // The preflight refused a partition predicted over the limit; this catches what the model does
  // not cover (evaluation batches, the export), on the rank where it happens.
  const MemoryLimitScope limit = memory_limit(experiment, topo, world.rank());
  if (is_root) {
    spdlog::info("{}: {}, {} parameters, {} x {}, {} of {}, {}", experiment.source,
                 counted(std::ssize(trainer.plan().layers), "layer"), trainer.plan().num_params(),
                 counted(topo.num_stages, "stage"), counted(topo.num_replicas, "replica"),
                 counted(experiment.pipeline.micro_batches, "micro-batch", "micro-batches"),
                 train.batch_size / topo.num_replicas / experiment.pipeline.micro_batches,
                 kernels::to_string(kernels.precision()));
  }

  RunCheckpoints checkpoints(trainer, experiment, options, world);
  const ResumePoint resumed = checkpoints.resume();
  if (resumed.finished) {
    RunResult finished;
    finished.steps_done = resumed.step;
    finished.already_finished = true;
    return finished;
  }
  const int64_t first_step = resumed.step;
  std::optional<double> unigram_bits;
  if (const auto* text = dynamic_cast<const data::TextCorpus*>(&dataset)) {
    unigram_bits = text->unigram_entropy_bits(data::Split::kTest);
    if (is_root) {
      spdlog::info("validation text: unigram entropy {:.3f} bits/char (a model must beat this)",
                   *unigram_bits);
    }
  }

  std::optional<log::MetricsWriter> metrics;
  std::optional<log::ProgressLine> progress;
  if (is_root) {
    metrics.emplace(options.run_dir);
    if (options.progress) {
      progress.emplace(options.progress, options.progress_in_place, train.steps, first_step,
                       options.progress_label);
    }
  }

  RunResult result;
  const auto start = Clock::now();
  auto window_start = start;
  int64_t window_steps = 0;
  LossWindow window;
  NonFiniteSteps nonfinite(train);
  StepReport report;
  int64_t step = first_step;
  for (; step < train.steps; ++step) {
    // The step's waits (and its logging and stop check) get comm.timeout; the evaluations and
    // checkpoints inside take their own, longer deadline.
    const comm::WatchScope watch(world, fmt::format("step {}", step + 1), comm::WaitPhase::kStep);
    const std::string step_name = fmt::format("step {} (outside the layers)", step + 1);
    const MemoryActivity step_activity = MemoryActivity::part(step_name);
    const MemoryActivityScope label(step_activity);
    report = trainer.step(step);
    if (spdlog::should_log(spdlog::level::debug)) log_step_times(report, step, topo);
    nonfinite.record(report, is_root);  // throws when the run must stop
    if (report.finite) window.add(report.loss);
    ++window_steps;
    const int64_t done = step + 1;
    if (done % experiment.log.every == 0 || done == train.steps) {
      const double samples_per_s =
          static_cast<double>(window_steps * train.batch_size) / seconds_since(window_start);
      result.final_train_loss = window.mean();
      comm::agree(world, [&] {  // rank 0 writes; a full disk stops every rank with its message
        if (!is_root) return;
        metrics->train(done, result.final_train_loss, report.lr, samples_per_s, nonfinite.total());
        const log::ProgressRecord record{.step = done,
                                         .loss = result.final_train_loss,
                                         .lr = report.lr,
                                         .samples_per_s = samples_per_s,
                                         .elapsed_s = seconds_since(start)};
        if (progress) progress->update(record);
        if (options.on_progress) {
          options.on_progress(record, log::estimate_eta_s(record, train.steps, first_step));
        }
      });
      window_start = Clock::now();
      window_steps = 0;
      window = {};
    }
    if (train.eval_every > 0 && done % train.eval_every == 0 && done != train.steps) {
      EvalReport eval = evaluate(trainer, step);
      comm::agree(world, [&] {
        if (!is_root) return;
        metrics->eval(done, "test", eval.loss, eval.accuracy, bits_per_char(experiment, eval.loss));
        if (progress) progress->finish();  // an in-place progress line ends before this one
        spdlog::info("{}",
                     log::format_evaluation({.step = done,
                                             .loss = eval.loss,
                                             .accuracy = eval.accuracy,
                                             .bits_per_char = bits_per_char(experiment, eval.loss),
                                             .unigram_entropy_bits = unigram_bits}));
      });
    }
    if (experiment.checkpoint.every > 0 && done % experiment.checkpoint.every == 0) {
      save(checkpoints, done);
    }
    const bool stop = (options.stop_requested && options.stop_requested->load()) ||
                      (options.cancel_requested && options.cancel_requested());
    if (!world.all_true(!stop)) {  // any rank asked to stop: all stop here, together
      if (!(experiment.checkpoint.every > 0 && done % experiment.checkpoint.every == 0)) {
        save(checkpoints, done);
      }
      result.preempted = true;
      ++step;
      break;
    }
  }
  if (progress) progress->finish();
  result.steps_done = step;
  const double wall_s = seconds_since(start);

  if (!result.preempted) {
    EvalReport eval = evaluate(trainer, step);
    result.final_eval_loss = eval.loss;
    result.final_eval_accuracy = eval.accuracy;
    result.final_bits_per_char = bits_per_char(experiment, eval.loss);
    result.unigram_entropy_bits = unigram_bits;
    const bool saved_last_step =
        experiment.checkpoint.every > 0 && step % experiment.checkpoint.every == 0;
    if (step > first_step && !saved_last_step) {
      save(checkpoints, step);
    }
    // The high-water mark of training, evaluation and checkpoints (what the model predicts); the
    // export after it (streamed tensor by tensor to rank 0) is not part of the prediction.
    const int64_t tensor_peak = memory.peak_bytes();
    if (!options.export_weights.empty()) {
      const MemoryActivityScope label(kExport);
      export_weights(trainer, experiment, dataset, options.export_weights);
      if (is_root && experiment.data.kind == data::DatasetKind::kText &&
          options.sample_length > 0) {
        result.sample = generate_text(
            experiment.model, experiment.data.seq_len,
            checkpoint::read_safetensors(options.export_weights).tensors, options.export_weights,
            {.prompt = "\n", .length = options.sample_length, .seed = train.seed}, kernels);
      }
    }
    const StageMemoryUse use = measure_memory(trainer, world, tensor_peak);
    comm::agree(world, [&] {
      if (!is_root) return;
      metrics->eval(step, "test", eval.loss, eval.accuracy, result.final_bits_per_char);
      metrics->write_summary(
          make_summary(experiment, trainer, result, step - first_step, wall_s, use));
    });
  }
  return result;
}

}  // namespace mpipe::train
