// Preflight checks of a training run: config, topology, partition, memory, data, every place it
// writes.
#include "job/preflight.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "comm/agree.h"
#include "comm/handshake.h"
#include "comm/tag_space.h"
#include "config/experiment.h"
#include "config/resolved_settings.h"
#include "config/settings_text.h"
#include "core/byte_format.h"
#include "core/error.h"
#include "core/system_memory.h"
#include "job/data_paths.h"
#include "kernels/precision.h"
#include "log/metrics_writer.h"
#include "model/model_builder.h"
#include "plan/batch_split.h"
#include "plan/memory_check.h"
#include "train/data_contract.h"
#include "train/message_tags.h"
#include "train/pipeline_plan.h"
#include "train/resumed_weight_grads.h"
#include "train/trainer.h"
#include "train/virtual_stage_rules.h"

namespace mpipe::job {
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

// A place the run writes, named in errors by `what`: a folder it creates if needed and writes
// into, or a file it creates, appends to or replaces (a temporary file renamed in its folder).
struct WritePlace {
  fs::path path;
  std::string what;
  bool is_file = false;
  bool folder_must_exist = false;  // a file in a folder the run does not create
};

// Whether the run can write `place`: checked at preflight, not when the first write fails.
void check_writable(const WritePlace& place) {
  if (!place.is_file) {
    check_writable_folder(place.path, place.what);
    return;
  }
  const fs::path& file = place.path;
  std::error_code ec;
  check_input(!fs::is_directory(file, ec), "{}: {} is a directory, not a file", file.string(),
              place.what);
  if (fs::exists(file, ec)) {
    // A FIFO would block the open; a device such as /dev/null the rename replaces with a file.
    check_input(fs::is_regular_file(file, ec),
                "{}: {} exists and is not a regular file (a run writes a new file or replaces a "
                "regular one)",
                file.string(), place.what);
    check_input(::access(file.c_str(), W_OK) == 0, "{}: {} is not writable", file.string(),
                place.what);
  }
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (place.folder_must_exist) {
    check_input(fs::is_directory(folder, ec), "{}: {}: the folder {} does not exist", file.string(),
                place.what, folder.string());
  }
  check_writable_folder(folder, place.what + " folder");
}

// Every place this rank of the run writes: the run directory (every rank), checkpoints/ (the
// ranks that write a shard, and rank 0, which commits), metrics.jsonl, summary.json and the
// export (rank 0).
std::vector<WritePlace> write_places(const TrainInputs& inputs, const comm::Topology& topology,
                                     bool is_root) {
  std::vector<WritePlace> places = {{.path = inputs.run_dir, .what = "run directory"}};
  if (is_root || topology.replica == 0) {
    places.push_back({.path = checkpoint::CheckpointStore(inputs.run_dir, 1).checkpoints_dir(),
                      .what = "checkpoints folder"});
  }
  if (!is_root) return places;
  const log::MetricsWriter metrics(inputs.run_dir);
  places.push_back({.path = metrics.metrics_path(), .what = "metrics file", .is_file = true});
  places.push_back({.path = metrics.summary_path(), .what = "summary file", .is_file = true});
  if (!inputs.export_path.empty()) {
    const fs::path file(inputs.export_path);
    const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
    std::error_code ec;
    const bool in_run_dir =
        fs::weakly_canonical(folder, ec) == fs::weakly_canonical(inputs.run_dir, ec);
    places.push_back({.path = file,
                      .what = "--export-weights",
                      .is_file = true,
                      .folder_must_exist = !in_run_dir});
  }
  return places;
}

// `replicas`: the data-parallel replicas, or 0 when not known yet (the smallest micro-batch,
// one example, is checked then).
void check_memory(const config::Experiment& experiment, const model::ModelPlan& plan,
                  int replicas) {
  const int64_t micro_batch_rows =
      replicas > 0 ? experiment.train.batch_size / replicas / experiment.pipeline.micro_batches : 1;
  const plan::MemoryDemands demands{.optimizer_slots = train::optimizer_slots(experiment.optimizer),
                                    .micro_batch_rows = micro_batch_rows,
                                    .batch_key = experiment.where("train.batch_size"),
                                    .dataset_bytes = 0,
                                    .dataset_key = {},
                                    .available_bytes = usable_memory_bytes()};
  if (auto problem = plan::memory_problem(experiment.model, plan, demands)) {
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

// K and D from the config and the world size; errors name the file. An evaluation (mpipe eval,
// translate) gives the same result on any layout, so its error says which one fits this world.
comm::Topology resolve_topology(const config::Experiment& experiment,
                                const comm::Communicator& world, bool evaluating) {
  try {
    return train::resolve_topology(experiment.pipeline, world.rank(), world.size());
  } catch (const InputError& e) {
    const std::string layout =
        evaluating
            ? fmt::format(
                  "; the result is the same on any layout: give --set "
                  "pipeline.stages={}{}",
                  world.size(),
                  experiment.pipeline.data_parallel <= 1 ? "" : " --set pipeline.data_parallel=1")
            : "";
    throw InputError(fmt::format("{}: {}{}", experiment.source, e.what(), layout));
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
    if (inputs.any_world) plan_for_any_world(experiment, world.size());
    train::keep_weight_grads(inputs.resumed_weight_grads, experiment.pipeline);
    if (auto problem = precision_problem(experiment, kernels::read_cpuinfo())) {
      throw InputError(*problem);
    }
    if (auto problem = progress_thread_problem(experiment, comm::thread_level())) {
      throw InputError(*problem);
    }
    if (!inputs.resuming && !inputs.evaluating) check_run_dir_is_fresh(inputs.run_dir);
    const comm::Topology& topology = result.plan.topology =
        resolve_topology(experiment, world, inputs.evaluating);
    if (!inputs.evaluating) {
      for (const WritePlace& place : write_places(inputs, topology, world.rank() == 0)) {
        check_writable(place);
      }
    }
    plan::check_batch_split(experiment.train.batch_size, experiment.pipeline.micro_batches,
                            topology.num_replicas, experiment.where("train.batch_size"));
    check_dataset_memory(experiment);
    check_data_paths(experiment);
    result.dataset = data::make_dataset(experiment.data, experiment.train.seed);
    result.dataset->check_contents(world.rank(), world.size());  // each rank its share
    const model::ModelPlan& plan = result.plan.model =
        model::plan_model(experiment.model, train::model_inputs(*result.dataset));
    check_memory(experiment, plan, topology.num_replicas);
    train::check_model_fits_data(experiment.model, plan, result.dataset->schema());
    train::check_virtual_stages(experiment, topology.num_pipeline_ranks);
    if (!inputs.init_weights.path.empty()) {
      train::check_init_weights(
          model::build_layers(experiment.model, train::model_inputs(*result.dataset), 0,
                              static_cast<int>(experiment.model.layers.size())),
          inputs.init_weights, plan.tied);
    }
    const plan::PipelinePlan& pipeline_plan = result.plan.pipeline =
        train::plan_experiment(experiment, plan, topology.num_pipeline_ranks, topology.num_replicas,
                               omp_get_max_threads());
    check_input(pipeline_plan.fits(), "{}", pipeline_plan.problem);
    train::check_message_tags(experiment,
                              train::message_tags(experiment, train::model_inputs(*result.dataset)),
                              comm::tag_upper_bound());
  });
  // Start-up agreement: every rank must run rank 0's resolved config and rank layout (with its
  // threads, which the planner's predictions, and so recompute: auto, depend on).
  const comm::Topology& topology = result.plan.topology;
  comm::require_same_as_rank0(
      world, {{.what = "config",
               .mine = config::settings_text(config::resolved_settings(result.experiment)),
               .difference =
                   [](const std::string& mine, const std::string& theirs) {
                     return config::describe_settings_difference(mine, theirs, "rank 0");
                   }},
              {.what = "world layout",
               .mine = fmt::format("{} stages x {} replicas, {} threads per rank",
                                   topology.num_pipeline_ranks, topology.num_replicas,
                                   omp_get_max_threads()),
               .difference = {}}});
  return result;
}

void plan_for_any_world(config::Experiment& experiment, int world_size) {
  plan::PipelineConfig& pipeline = experiment.pipeline;
  const bool stages_given = experiment.refs.contains("pipeline.stages");
  const bool replicas_given = experiment.refs.contains("pipeline.data_parallel");
  if (!stages_given && pipeline.data_parallel != 0) {
    pipeline.stages = 0;
    return;
  }
  if (replicas_given || pipeline.stages == 0) return;
  pipeline.data_parallel = 0;                                        // auto: world / stages
  if (world_size == 0 || world_size % pipeline.stages != 0) return;  // resolve_topology says why
  // The replicas share the experiment's micro-batches, so that each keeps the size the file
  // gives it (train.batch_size / pipeline.micro_batches): batch norm's statistics, and with them
  // the weights, do not depend on the world the daemon has.
  const int replicas = world_size / pipeline.stages;
  check_input(pipeline.micro_batches % replicas == 0,
              "{}: {} micro-batch{} of {} examples cannot be shared by the {} data-parallel "
              "replicas of {} stage{} on {} ranks without changing their size; set "
              "pipeline.micro_batches to a multiple of {}, or pipeline.data_parallel",
              experiment.where("pipeline.micro_batches"), pipeline.micro_batches,
              pipeline.micro_batches == 1 ? "" : "es",
              experiment.train.batch_size / pipeline.micro_batches, replicas, pipeline.stages,
              pipeline.stages == 1 ? "" : "s", world_size, replicas);
  pipeline.data_parallel = replicas;
  pipeline.micro_batches /= replicas;
}

config::Experiment check_experiment_for_any_world(const std::string& config_path,
                                                  const std::vector<std::string>& overrides) {
  config::Experiment experiment = config::load_experiment(config_path, overrides);
  plan_for_any_world(experiment, 0);
  check_dataset_memory(experiment);
  check_data_paths(experiment);
  const auto dataset = data::make_dataset(experiment.data, experiment.train.seed);
  dataset->check_contents(0, 1);
  const model::ModelPlan plan = model::plan_model(experiment.model, train::model_inputs(*dataset));
  if (experiment.pipeline.stages > 0) {
    const plan::PipelinePlan pipeline_plan = train::plan_experiment(
        experiment, plan, experiment.pipeline.stages,
        std::max(1, experiment.pipeline.data_parallel), omp_get_max_threads());
    check_input(pipeline_plan.fits(), "{}", pipeline_plan.problem);
  }
  check_memory(experiment, plan, experiment.pipeline.data_parallel);
  train::check_model_fits_data(experiment.model, plan, dataset->schema());
  return experiment;
}

}  // namespace mpipe::job
