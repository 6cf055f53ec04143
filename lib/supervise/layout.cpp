// A run's layout: K stages x D replicas, each running M micro-batches a step.
#include "supervise/layout.h"

#include <fmt/format.h>

namespace mpipe::supervise {

std::string to_string(const Layout& layout) {
  return fmt::format("{} stage{} x {} replica{}, {} micro-batch{} each", layout.stages,
                     layout.stages == 1 ? "" : "s", layout.replicas,
                     layout.replicas == 1 ? "" : "s", layout.micro_batches,
                     layout.micro_batches == 1 ? "" : "es");
}

}  // namespace mpipe::supervise
