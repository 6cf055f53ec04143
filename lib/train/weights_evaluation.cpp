// A checkpoint's or a weights file's loss, accuracy and measures on a split, over the ranks.
#include "train/weights_evaluation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>

#include "checkpoint/atomic_file.h"
#include "checkpoint/safetensors.h"
#include "comm/agree.h"
#include "core/byte_format.h"
#include "core/error.h"
#include "train/init_weights.h"
#include "train/run_checkpoint.h"

namespace mpipe::train {
namespace {

namespace fs = std::filesystem;

// What --checkpoint names: a run directory, or a step folder in one (its checkpoints/step_N).
struct CheckpointPath {
  std::string run_dir;
  std::optional<int64_t> step;  // a step folder's
};

CheckpointPath parse_checkpoint_path(const std::string& path) {
  fs::path folder = fs::path(path).lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path();  // a trailing '/'
  const std::string name = folder.filename().string();
  constexpr std::string_view kPrefix = "step_";
  if (!name.starts_with(kPrefix) || folder.parent_path().filename() != "checkpoints") {
    return {.run_dir = path, .step = std::nullopt};
  }
  int64_t step = 0;
  const char* end = name.data() + name.size();
  const auto [last, error] = std::from_chars(name.data() + kPrefix.size(), end, step);
  if (error != std::errc() || last != end) return {.run_dir = path, .step = std::nullopt};
  const fs::path run_dir = folder.parent_path().parent_path();
  return {.run_dir = run_dir.empty() ? "." : run_dir.string(), .step = step};
}

// Rank 0: the committed step to load, the step folder's or the run's newest.
int64_t pick_step(const std::string& path, const CheckpointPath& checkpoint) {
  if (!checkpoint.step) {
    require_committed_checkpoint(path, "--checkpoint");
    return *checkpoint::CheckpointStore(path, 1).latest_committed();
  }
  const std::vector<int64_t> committed =
      checkpoint::CheckpointStore(checkpoint.run_dir, 1).committed_steps();
  check_input(
      std::ranges::find(committed, *checkpoint.step) != committed.end(),
      "{}: --checkpoint: not a committed checkpoint (committed in {}: {})", path,
      checkpoint.run_dir,
      committed.empty() ? std::string("none") : fmt::format("{}", fmt::join(committed, ", ")));
  return *checkpoint.step;
}

// Rank 0, before the evaluation: `path`, given by `option`, can be written (a regular file or a
// new one, in a folder that exists).
void check_output_path(const std::string& path, std::string_view option) {
  const fs::path file(path);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  check_input(!fs::exists(status) || fs::is_regular_file(status),
              "{}: {}: exists and is not a regular file", path, option);
  check_input(fs::is_directory(folder, ec), "{}: {}: the folder {} does not exist", path, option,
              folder.string());
}

// The shape of the logits file's tensor: [examples, ...one example's output].
Shape logits_shape(int64_t examples, const Shape& output) {
  std::vector<int64_t> dims = {examples};
  dims.insert(dims.end(), output.dims().begin(), output.dims().end());
  return Shape(std::move(dims));
}

// Rank 0, before the evaluation: the outputs of `examples` examples of shape `output` fit in
// `limit` bytes, and in one MPI gather (a count of at most 2^31 - 1 floats).
void check_logits_size(const std::string& path, int64_t examples, const Shape& output,
                       int64_t limit) {
  const double values = static_cast<double>(examples) * static_cast<double>(output.numel());
  const double bytes = values * static_cast<double>(sizeof(float));
  check_input(values <= static_cast<double>(std::numeric_limits<int32_t>::max()),
              "{}: --logits: the outputs of {} examples (each {} floats) are {:.0f} floats, more "
              "than one gather carries (2^31 - 1): evaluate fewer (--set train.eval_batches=N)",
              path, examples, output, values);
  check_input(bytes <= static_cast<double>(limit),
              "{}: --logits: the outputs of {} examples (each {} floats) take {}, over "
              "--logits-limit {}: evaluate fewer (--set train.eval_batches=N) or raise the limit",
              path, examples, output, format_bytes(bytes),
              format_bytes(static_cast<double>(limit)));
}

// Rank 0: the outputs into `path` as one safetensors tensor "logits", atomically.
void write_logits(const std::string& path, std::vector<float> outputs, int64_t examples,
                  const Shape& output, const WeightsEvaluation& evaluation) {
  checkpoint::write_safetensors(
      path,
      std::vector<checkpoint::TensorView>{
          {.name = "logits", .shape = logits_shape(examples, output), .values = outputs}},
      {{"producer", "mpipe"},
       {"format", "pt"},
       {"source", evaluation.source},
       {"split", evaluation.split}});
}

// Rank 0: the examples' losses into `path`, atomically.
void write_losses(const std::string& path, const std::vector<ExampleLoss>& losses) {
  std::string text;
  for (size_t i = 0; i < losses.size(); ++i) {
    const double mean = losses[i].rows > 0 ? losses[i].sum / static_cast<double>(losses[i].rows)
                                           : std::numeric_limits<double>::quiet_NaN();
    text += fmt::format("{}\t{}\t{}\n", i, mean, losses[i].rows);
  }
  checkpoint::write_file_atomically(path, text);
}

}  // namespace

data::Split parse_split(std::string_view name, data::DatasetKind kind) {
  if (name == "train") return data::Split::kTrain;
  const std::string_view held_out = data::held_out_split_name(kind);
  if (name == held_out) return data::Split::kTest;
  check_input(name == "val" || name == "test", "--split {}: expected train, val or test", name);
  throw InputError(fmt::format("--split {}: {} data has no {} split (its held-out split is {})",
                               name, name_of(data::kDatasetNames, kind), name, held_out));
}

LoadedWeights load_weights(Trainer& trainer, const config::Experiment& experiment,
                           const WeightsSource& source, const comm::Communicator& world) {
  if (source.checkpoint.empty()) {
    comm::agree(world, [&] {
      for (int chunk = 0; chunk < trainer.num_chunks(); ++chunk) {
        load_init_weights(trainer.stage(chunk), {.path = source.weights, .skip = {}},
                          trainer.tied());
      }
    });
    return {.source = source.weights, .step = 0};
  }
  // Rank 0 picks the step, so every rank loads the same one.
  const CheckpointPath checkpoint = parse_checkpoint_path(source.checkpoint);
  double picked = 0;
  comm::agree(world, [&] {
    if (world.rank() == 0) picked = static_cast<double>(pick_step(source.checkpoint, checkpoint));
  });
  world.broadcast(std::span<double>(&picked, 1), 0);
  const auto step = static_cast<int64_t>(picked);
  RunOptions options;
  options.run_dir = checkpoint.run_dir;
  RunCheckpoints(trainer, experiment, options, world).load(step);
  return {.source = fmt::format("{} (checkpoint step {})", options.run_dir, step), .step = step};
}

WeightsEvaluation evaluate_weights(const config::Experiment& experiment,
                                   const data::Dataset& dataset, RunPlan plan,
                                   const WeightsSource& source, std::string_view split,
                                   const EvalFiles& files, const comm::Communicator& world,
                                   kernels::KernelContext& kernels) {
  WeightsEvaluation result{
      .source = source.weights,
      .split = std::string(split.empty() ? data::held_out_split_name(experiment.data.kind) : split),
      .report = {},
      .measures = {},
      .translation = std::nullopt};
  data::Split which = data::Split::kTest;
  const Shape output = plan.model.layers.back().output;  // one example's
  comm::agree(world, [&] {
    which = parse_split(result.split, experiment.data.kind);
    if (world.rank() != 0) return;
    if (!files.losses.empty()) check_output_path(files.losses, "--losses");
    if (!files.logits.empty()) {
      check_output_path(files.logits, "--logits");
      check_logits_size(files.logits, eval_batches(experiment.train, dataset.size(which)).examples,
                        output, files.logits_limit);
    }
  });
  Trainer trainer(experiment, std::move(plan), world, kernels, dataset);
  const LoadedWeights loaded = load_weights(trainer, experiment, source, world);
  result.source = loaded.source;
  const int64_t step = loaded.step;
  result.report = trainer.evaluate(
      step, which, {.example_losses = !files.losses.empty(), .outputs = !files.logits.empty()});
  result.translation = score_translations(trainer, experiment, dataset, which);
  comm::agree(world, [&] {
    if (world.rank() != 0) return;
    result.measures = eval_measures(dataset, which, result.report);
    if (!files.losses.empty()) write_losses(files.losses, result.report.example_losses);
    if (!files.logits.empty()) {
      write_logits(files.logits, std::move(result.report.outputs), result.report.examples, output,
                   result);
    }
  });
  return result;
}

}  // namespace mpipe::train
