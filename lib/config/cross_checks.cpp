// Cross-section checks: batch size against micro-batches and data parallelism.
#include "config/cross_checks.h"

#include <fmt/format.h>

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
  const int micro_batches = experiment.pipeline.micro_batches;
  const int replicas = experiment.pipeline.data_parallel;  // 0 = auto: not known yet
  const int64_t divisor = static_cast<int64_t>(micro_batches) * (replicas > 0 ? replicas : 1);
  const int64_t batch_size = experiment.train.batch_size;
  if (batch_size % divisor == 0) return;
  const Field where = locate(root, "train", "batch_size");
  if (replicas > 0) {
    where.fail(fmt::format(
        "must be divisible by pipeline.micro_batches * pipeline.data_parallel = {}, got {}",
        divisor, batch_size));
  }
  where.fail(
      fmt::format("must be divisible by pipeline.micro_batches = {}, got {}", divisor, batch_size));
}

}  // namespace mpipe::config
