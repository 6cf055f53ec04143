// Cross-section checks: batch size against micro-batches and data parallelism, traced steps
// against the run's steps.
#include "config/cross_checks.h"

#include <fmt/format.h>

#include <vector>

#include "pipeline/batch_split.h"

namespace mpipe::config {
namespace {

// The value at section.key in the tree, or an absent Field (no line) when the file lacks it.
Field locate(const Field& root, const char* section, const char* key) {
  const std::string path = std::string(section) + "." + key;
  const YAML::Node& tree = root.node();
  if (tree.IsMap()) {
    const YAML::Node map = tree[section];
    if (map.IsDefined() && map.IsMap()) {
      const YAML::Node value = map[key];
      if (value.IsDefined()) return Field(root.source(), value, value.Mark(), path);
    }
  }
  return Field(root.source(), path);
}

}  // namespace

void check_cross_sections(const Field& root, const Experiment& experiment) {
  // pipeline.data_parallel 0 (auto) is not known yet: micro_batches alone is checked.
  if (auto problem = pipeline::batch_split_problem(experiment.train.batch_size,
                                                   experiment.pipeline.micro_batches,
                                                   experiment.pipeline.data_parallel)) {
    locate(root, "train", "batch_size").fail(*problem);
  }
  const std::vector<int64_t>& traced = experiment.log.trace_steps;
  if (!traced.empty() && traced.back() > experiment.train.steps) {
    locate(root, "log", "trace_steps")
        .elements("a list of steps")
        .back()
        .fail(fmt::format("step {} is beyond train.steps ({})", traced.back(),
                          experiment.train.steps));
  }
}

}  // namespace mpipe::config
