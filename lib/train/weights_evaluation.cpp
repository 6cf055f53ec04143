// A checkpoint's or a weights file's loss, accuracy and measures on a split, over the ranks.
#include "train/weights_evaluation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <span>

#include "comm/agree.h"
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
  return {.run_dir = folder.parent_path().parent_path().string(), .step = step};
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

}  // namespace

data::Split parse_split(std::string_view name, data::DatasetKind kind) {
  if (name == "train") return data::Split::kTrain;
  const std::string_view held_out = data::held_out_split_name(kind);
  if (name == held_out) return data::Split::kTest;
  check_input(name == "val" || name == "test", "--split {}: expected train, val or test", name);
  throw InputError(fmt::format("--split {}: {} data has no {} split (its held-out split is {})",
                               name, name_of(data::kDatasetNames, kind), name, held_out));
}

WeightsEvaluation evaluate_weights(const config::Experiment& experiment,
                                   const data::Dataset& dataset, RunPlan plan,
                                   const WeightsSource& source, std::string_view split,
                                   const comm::Communicator& world,
                                   kernels::KernelContext& kernels) {
  WeightsEvaluation result{
      .source = source.weights,
      .split = std::string(split.empty() ? data::held_out_split_name(experiment.data.kind) : split),
      .report = {},
      .measures = {}};
  data::Split which = data::Split::kTest;
  comm::agree(world, [&] { which = parse_split(result.split, experiment.data.kind); });
  Trainer trainer(experiment, std::move(plan), world, kernels, dataset);
  int64_t step = 0;
  if (!source.checkpoint.empty()) {
    // Rank 0 picks the step, so every rank loads the same one.
    const CheckpointPath checkpoint = parse_checkpoint_path(source.checkpoint);
    double picked = 0;
    comm::agree(world, [&] {
      if (world.rank() == 0) picked = static_cast<double>(pick_step(source.checkpoint, checkpoint));
    });
    world.broadcast(std::span<double>(&picked, 1), 0);
    step = static_cast<int64_t>(picked);
    RunOptions options;
    options.run_dir = checkpoint.run_dir;
    RunCheckpoints(trainer, experiment, options, world).load(step);
    result.source = fmt::format("{} (checkpoint step {})", options.run_dir, step);
  } else {
    comm::agree(world, [&] {
      for (int chunk = 0; chunk < trainer.num_chunks(); ++chunk) {
        load_init_weights(trainer.stage(chunk), {.path = source.weights, .skip = {}},
                          trainer.tied());
      }
    });
  }
  result.report = trainer.evaluate(step, which);
  comm::agree(world, [&] {
    if (world.rank() == 0) result.measures = eval_measures(dataset, which, result.report);
  });
  return result;
}

}  // namespace mpipe::train
