// Preflight of a training run (`mpipe train` and each experiment of `mpipe serve`): every check
// of the command line, config, data, model and paths that can fail, done on every rank before
// the first collective, so a bad input ends the job with one line and nothing written. Also the
// same checks without a world (what `mpipe submit` can know before the experiment runs).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.h"
#include "config/experiment.h"
#include "data/dataset.h"
#include "train/init_weights.h"
#include "train/pipeline_plan.h"
#include "train/resumed_weight_grads.h"

namespace mpipe::job {

struct TrainInputs {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string run_dir;
  std::string export_path;
  train::InitWeights init_weights = {};  // --init-weights, --init-skip
  bool resuming = false;  // --resume or --resume-or-start: the run directory may hold a run
  // `mpipe train` resuming: the settings stored with the run's newest committed checkpoint are the
  // experiment's, and `overrides` change them (see run_train_job). The daemon runs its spool
  // entry's settings instead.
  bool stored_settings = false;
  // The daemon: pipeline.stages and pipeline.data_parallel that the experiment does not fix are
  // planned for the world size (see plan_for_any_world).
  bool any_world = false;
  // `mpipe eval`: nothing is written, so no run directory is checked (`init_weights` is the file
  // evaluated, checked against the model).
  bool evaluating = false;
  // Resuming: how the run's checkpoint summed its weight gradients, which weight_grads: auto keeps
  // (plan::PipelineConfig::resumed_weight_grads; run_train_job reads it); nullopt for a new run.
  std::optional<train::ResumedWeightGrads> resumed_weight_grads = std::nullopt;
};

struct PreflightResult {
  config::Experiment experiment;
  std::unique_ptr<data::Dataset> dataset;
  train::RunPlan plan;  // this rank's place, the model's shapes, the pipeline plan
};

// Why this CPU (`cpuinfo`: the text of /proc/cpuinfo) cannot run the experiment's
// train.precision, as one line naming the key and its file:line; nullopt when it can.
std::optional<std::string> precision_problem(const config::Experiment& experiment,
                                             std::string_view cpuinfo);

// Why this MPI library (which provides thread support `provided`) cannot run the experiment's
// comm.progress_thread, as one line naming the key and its file:line; nullopt when it can.
std::optional<std::string> progress_thread_problem(const config::Experiment& experiment,
                                                   comm::ThreadLevel provided);

// Refuses to start a fresh run on top of an earlier one (its metrics and checkpoints would mix).
void check_run_dir_is_fresh(const std::string& run_dir);

// Collective over `world` (through comm::agree): throws AgreedError on every rank when any
// rank finds a problem, or when a rank's resolved config or rank layout differs from rank 0's.
PreflightResult preflight_train(const TrainInputs& inputs, const comm::Communicator& world);

// What the daemon runs on `world_size` ranks (0: not known yet, at submit): pipeline keys the
// experiment (file or --set) leaves out become `auto`, so it fits the world it gets. No stages:
// stages auto (world / data_parallel), unless data_parallel is auto (then stages stays 1);
// stages given but no data_parallel: data_parallel = world / stages, and the replicas share
// pipeline.micro_batches (each runs micro_batches / data_parallel of them), so a micro-batch keeps
// the size the file gives it; throws InputError naming pipeline.micro_batches when they cannot.
void plan_for_any_world(config::Experiment& experiment, int world_size);

// The checks of preflight_train that do not depend on the world size, run on one process for an
// experiment the daemon will run (plan_for_any_world applied): the config, the data, the model's
// shapes, the partition when the stages are fixed, and sizes that cannot fit in memory. Throws
// InputError with the same one-line messages as preflight_train.
config::Experiment check_experiment_for_any_world(const std::string& config_path,
                                                  const std::vector<std::string>& overrides);

}  // namespace mpipe::job
