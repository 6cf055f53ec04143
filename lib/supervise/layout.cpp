// A run's layout: K stages x D replicas, each running M micro-batches a step, and the --set values
// that give it.
#include "supervise/layout.h"

#include <fmt/format.h>

namespace mpipe::supervise {

std::string to_string(const Layout& layout) {
  return fmt::format("{} stage{} x {} replica{}, {} micro-batch{} each", layout.stages,
                     layout.stages == 1 ? "" : "s", layout.replicas,
                     layout.replicas == 1 ? "" : "s", layout.micro_batches,
                     layout.micro_batches == 1 ? "" : "es");
}

nlohmann::ordered_json layout_json(const Layout& layout) {
  return {{"stages", layout.stages},
          {"replicas", layout.replicas},
          {"micro_batches", layout.micro_batches}};
}

std::vector<std::string> layout_settings(const Layout& layout, bool auto_partition) {
  std::vector<std::string> settings = {
      fmt::format("pipeline.stages={}", layout.stages),
      fmt::format("pipeline.data_parallel={}", layout.replicas),
      fmt::format("pipeline.micro_batches={}", layout.micro_batches)};
  if (auto_partition) settings.emplace_back("pipeline.partition=auto");
  return settings;
}

}  // namespace mpipe::supervise
