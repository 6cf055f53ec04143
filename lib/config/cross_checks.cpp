// Cross-section checks: batch size against micro-batches and data parallelism, traced steps
// and the learning-rate schedule's phases against the run's steps.
#include "config/cross_checks.h"

#include <fmt/format.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "optim/lr_schedule.h"
#include "plan/batch_split.h"

namespace mpipe::config {
namespace {

// The value at the key path (section, key, ...) in the tree, or an absent Field (no line) when
// the file lacks it.
Field locate(const Field& root, std::initializer_list<const char*> keys) {
  std::string path;
  for (const char* key : keys) path += path.empty() ? key : std::string(".") + key;
  YAML::Node node = root.node();
  for (const char* key : keys) {
    const YAML::Node& map = node;  // (const: looking a key up must not add it)
    if (!map.IsMap()) return Field(root.source(), path);
    const YAML::Node value = map[key];
    if (!value.IsDefined()) return Field(root.source(), path);
    node.reset(value);  // (rebinds: assignment would overwrite the tree's node)
  }
  return Field(root.source(), node, node.Mark(), path);
}

// Under the wsd schedule, warm-up and decay must fit in the schedule's length (train.steps unless
// optimizer.schedule.total_steps sets it) without overlapping.
void check_wsd_phases(const Field& root, const Experiment& experiment) {
  const optim::LrScheduleConfig& schedule = experiment.optimizer.schedule;
  if (schedule.kind != optim::LrScheduleKind::kWsd) return;
  const int64_t steps = optim::schedule_steps(experiment.optimizer, experiment.train.steps);
  const char* length = schedule.total_steps > 0 ? "optimizer.schedule.total_steps" : "train.steps";
  const int64_t decay_steps = optim::wsd_decay_steps(schedule, steps);
  if (schedule.warmup_steps + decay_steps <= steps) return;
  const bool by_count = schedule.decay_steps > 0;
  locate(root, {"optimizer", "schedule", by_count ? "decay_steps" : "decay_fraction"})
      .fail(fmt::format("warmup_steps + {} = {} + {} = {} must be at most {} ({})",
                        by_count ? "decay_steps" : fmt::format("decay_fraction x {}", length),
                        schedule.warmup_steps, decay_steps, schedule.warmup_steps + decay_steps,
                        length, steps));
}

}  // namespace

void check_cross_sections(const Field& root, const Experiment& experiment) {
  // pipeline.data_parallel 0 (auto) is not known yet: micro_batches alone is checked.
  if (auto problem =
          plan::batch_split_problem(experiment.train.batch_size, experiment.pipeline.micro_batches,
                                    experiment.pipeline.data_parallel)) {
    locate(root, {"train", "batch_size"}).fail(*problem);
  }
  const std::vector<int64_t>& traced = experiment.log.trace_steps;
  if (!traced.empty() && traced.back() > experiment.train.steps) {
    locate(root, {"log", "trace_steps"})
        .elements("a list of steps")
        .back()
        .fail(fmt::format("step {} is beyond train.steps ({})", traced.back(),
                          experiment.train.steps));
  }
  check_wsd_phases(root, experiment);
}

}  // namespace mpipe::config
