// Preflight checks of a training run: config, topology, partition, memory, data, paths.
#include "serve/preflight.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "comm/agree.h"
#include "comm/handshake.h"
#include "comm/tag_space.h"
#include "config/experiment.h"
#include "config/resolved_settings.h"
#include "config/settings_text.h"
#include "core/byte_format.h"
#include "core/error.h"
#include "core/system_memory.h"
#include "kernels/precision.h"
#include "model/memory_check.h"
#include "model/model_builder.h"
#include "pipeline/batch_split.h"
#include "train/data_contract.h"
#include "train/message_tags.h"
#include "train/pipeline_plan.h"
#include "train/trainer.h"

namespace mpipe::serve {
namespace {

namespace fs = std::filesystem;

// The nearest folder of `path` (itself or an ancestor) that exists.
fs::path existing_ancestor(const fs::path& path) {
  fs::path folder = fs::absolute(path);
  std::error_code ec;
  while (!fs::exists(folder, ec) && folder.has_parent_path() && folder != folder.parent_path()) {
    folder = folder.parent_path();
  }
  return folder;
}

// A folder that the run creates (if needed) and writes into: `what` names it in errors.
void check_writable_folder(const fs::path& folder, const std::string& what) {
  std::error_code ec;
  if (fs::exists(folder, ec)) {
    check_input(fs::is_directory(folder, ec), "{}: {} is not a directory", folder.string(), what);
    check_input(::access(folder.c_str(), W_OK | X_OK) == 0, "{}: {} is not writable",
                folder.string(), what);
    return;
  }
  const fs::path ancestor = existing_ancestor(folder);
  check_input(fs::is_directory(ancestor, ec), "{}: cannot create {}: {} is not a directory",
              folder.string(), what, ancestor.string());
  check_input(::access(ancestor.c_str(), W_OK | X_OK) == 0,
              "{}: cannot create {}: {} is not writable", folder.string(), what, ancestor.string());
}

// The export file: not a folder, in a folder that exists (or is the run directory) and can be
// written; checked now, not after training.
void check_export_path(const std::string& path, const std::string& run_dir) {
  const fs::path file(path);
  std::error_code ec;
  check_input(!fs::is_directory(file, ec), "{}: --export-weights is a directory, not a file", path);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  const bool in_run_dir = fs::weakly_canonical(folder, ec) == fs::weakly_canonical(run_dir, ec);
  if (!in_run_dir) {
    check_input(fs::is_directory(folder, ec), "{}: --export-weights: the folder {} does not exist",
                path, folder.string());
  }
  check_writable_folder(folder, "--export-weights folder");
}

// `replicas`: the data-parallel replicas, or 0 when not known yet (the smallest micro-batch,
// one example, is checked then).
void check_memory(const config::Experiment& experiment, const model::ModelPlan& plan,
                  int replicas) {
  const int64_t micro_batch_rows =
      replicas > 0 ? experiment.train.batch_size / replicas / experiment.pipeline.micro_batches : 1;
  const model::MemoryDemands demands{
      .optimizer_slots = train::optimizer_slots(experiment.optimizer),
      .micro_batch_rows = micro_batch_rows,
      .batch_key = experiment.where("train.batch_size"),
      .dataset_bytes = 0,
      .dataset_key = {},
      .available_bytes = usable_memory_bytes()};
  if (auto problem = model::memory_problem(experiment.model, plan, demands)) {
    throw InputError(*problem);
  }
}

// Synthetic data too large for memory, before it is generated.
void check_dataset_memory(const config::Experiment& experiment) {
  const double bytes = data::configured_dataset_bytes(experiment.data);
  const auto available = static_cast<double>(usable_memory_bytes());
  check_input(bytes <= available, "{}: the dataset needs {} in memory; this machine has {}",
              experiment.where("data.num_examples"), format_bytes(bytes), format_bytes(available));
}

// K and D from the config and the world size; errors name the file.
comm::Topology resolve_topology(const config::Experiment& experiment,
                                const comm::Communicator& world) {
  try {
    return train::resolve_topology(experiment.pipeline, world.rank(), world.size());
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", experiment.source, e.what()));
  }
}

}  // namespace

std::optional<std::string> precision_problem(const config::Experiment& experiment,
                                             std::string_view cpuinfo) {
  const kernels::Precision precision = experiment.train.precision;
  const auto flag = kernels::missing_cpu_flag(precision, cpuinfo);
  if (!flag) return std::nullopt;
  return fmt::format(
      "{}: {} needs a CPU with the {} flag, which /proc/cpuinfo does not list; use f32",
      experiment.where("train.precision"), kernels::to_string(precision), *flag);
}

std::optional<std::string> progress_thread_problem(const config::Experiment& experiment,
                                                   comm::ThreadLevel provided) {
  if (!experiment.comm.progress_thread || provided == comm::ThreadLevel::kMultiple) {
    return std::nullopt;
  }
  return fmt::format(
      "{}: true needs MPI_THREAD_MULTIPLE, but this MPI library provides only {}; set it to false",
      experiment.where("comm.progress_thread"), comm::to_string(provided));
}

void check_run_dir_is_fresh(const std::string& run_dir) {
  for (const char* entry : {"metrics.jsonl", "checkpoints", "summary.json"}) {
    check_input(!fs::exists(fs::path(run_dir) / entry),
                "{}: already holds a run ({} exists); pass --resume to continue it or "
                "--run-dir for a new one",
                run_dir, entry);
  }
}

PreflightResult preflight_train(const TrainInputs& inputs, const comm::Communicator& world) {
  PreflightResult result;
  comm::agree(world, [&] {
    config::Experiment& experiment = result.experiment;
    experiment = config::load_experiment(inputs.config_path, inputs.overrides);
    if (inputs.any_world) plan_for_any_world(experiment);
    if (auto problem = precision_problem(experiment, kernels::read_cpuinfo())) {
      throw InputError(*problem);
    }
    if (auto problem = progress_thread_problem(experiment, comm::thread_level())) {
      throw InputError(*problem);
    }
    if (!inputs.resuming) check_run_dir_is_fresh(inputs.run_dir);
    check_writable_folder(inputs.run_dir, "run directory");
    if (world.rank() == 0) check_export_path(inputs.export_path, inputs.run_dir);
    const comm::Topology topology = resolve_topology(experiment, world);
    pipeline::check_batch_split(experiment.train.batch_size, experiment.pipeline.micro_batches,
                                topology.num_replicas, experiment.where("train.batch_size"));
    check_dataset_memory(experiment);
    result.dataset = data::make_dataset(experiment.data, experiment.train.seed);
    const model::ModelPlan plan =
        model::plan_model(experiment.model, result.dataset->input_shape());
    check_memory(experiment, plan, topology.num_replicas);
    train::check_model_fits_data(experiment.model, plan, result.dataset->schema());
    const pipeline::PipelinePlan pipeline_plan =
        train::plan_experiment(experiment, plan, topology.num_stages, topology.num_replicas);
    check_input(pipeline_plan.fits(), "{}", pipeline_plan.problem);
    train::check_message_tags(experiment,
                              train::message_tags(experiment, result.dataset->input_shape()),
                              comm::tag_upper_bound());
  });
  // Start-up agreement: every rank must run rank 0's resolved config and rank layout.
  const comm::Topology topology = resolve_topology(result.experiment, world);
  comm::require_same_as_rank0(
      world,
      {{.what = "config",
        .mine = config::settings_text(config::resolved_settings(result.experiment)),
        .difference =
            [](const std::string& mine, const std::string& theirs) {
              return config::describe_settings_difference(mine, theirs, "rank 0");
            }},
       {.what = "world layout",
        .mine = fmt::format("{} stages x {} replicas", topology.num_stages, topology.num_replicas),
        .difference = {}}});
  return result;
}

void plan_for_any_world(config::Experiment& experiment) {
  pipeline::PipelineConfig& pipeline = experiment.pipeline;
  const bool stages_given = experiment.refs.contains("pipeline.stages");
  const bool replicas_given = experiment.refs.contains("pipeline.data_parallel");
  if (!stages_given && pipeline.data_parallel != 0) {
    pipeline.stages = 0;
  } else if (!replicas_given && pipeline.stages != 0) {
    pipeline.data_parallel = 0;
  }
}

config::Experiment check_experiment_for_any_world(const std::string& config_path,
                                                  const std::vector<std::string>& overrides) {
  config::Experiment experiment = config::load_experiment(config_path, overrides);
  plan_for_any_world(experiment);
  check_dataset_memory(experiment);
  const auto dataset = data::make_dataset(experiment.data, experiment.train.seed);
  const model::ModelPlan plan = model::plan_model(experiment.model, dataset->input_shape());
  if (experiment.pipeline.stages > 0) {
    const pipeline::PipelinePlan pipeline_plan =
        train::plan_experiment(experiment, plan, experiment.pipeline.stages,
                               std::max(1, experiment.pipeline.data_parallel));
    check_input(pipeline_plan.fits(), "{}", pipeline_plan.problem);
  }
  check_memory(experiment, plan, experiment.pipeline.data_parallel);
  train::check_model_fits_data(experiment.model, plan, dataset->schema());
  return experiment;
}

}  // namespace mpipe::serve
