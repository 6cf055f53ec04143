// The planner's verdict on a layout for a supervised run (the LayoutCheck of replan): the batch
// split, the partition, virtual stages and pipeline.memory_limit, as preflight would judge them.
#pragma once

#include <optional>
#include <string>

#include "config/experiment.h"
#include "model/model_builder.h"
#include "supervise/layout.h"

namespace mpipe::supervise {

// The layout `experiment` runs on `world_size` ranks (its `auto` counts resolved); throws
// InputError naming the experiment file when it cannot.
Layout experiment_layout(const config::Experiment& experiment, int world_size);

// Whether the experiment's weight gradients sum in a fixed tree (weight_grads: tree, or auto
// resolved to it), under which a change of D between powers of two stays bit-identical.
bool tree_weight_grads(const config::Experiment& experiment);

// Whether `layout` needs pipeline.partition=auto: the experiment's manual partition is for another
// stage count.
bool needs_auto_partition(const config::Experiment& experiment, const Layout& layout);

// `experiment` with the layout set (stages, data_parallel, micro_batches; a manual partition for
// another stage count becomes auto), as the relaunch's --set options set it.
config::Experiment with_layout(config::Experiment experiment, const Layout& layout);

// Plans the model once (the data's shapes); each call judges one layout.
class PlannerCheck {
 public:
  explicit PlannerCheck(config::Experiment experiment);
  // From now on judges layouts as a resume of the newest committed checkpoint of `run_dir` runs
  // them: weight_grads: auto keeps the choice it records (train::checkpoint_weight_grads), which
  // holds more or less memory than a new run's; as a new run when there is none. Throws
  // InputError with the resumed run's line when its record is not a choice.
  void resume_from(const std::string& run_dir);
  // The experiment it judges layouts of (its resumed choice set by resume_from).
  const config::Experiment& experiment() const { return experiment_; }
  // Why `layout` cannot run (one line naming the key), nullopt when it can.
  std::optional<std::string> operator()(const Layout& layout) const;

 private:
  config::Experiment experiment_;
  model::ModelPlan model_;
};

}  // namespace mpipe::supervise
