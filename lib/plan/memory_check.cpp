// Preflight memory check against the machine's memory.
#include "plan/memory_check.h"

#include <fmt/format.h>

#include "core/byte_format.h"

namespace mpipe::plan {

std::optional<std::string> memory_problem(const model::ModelSpec& spec,
                                          const model::ModelPlan& plan,
                                          const MemoryDemands& demands) {
  // Doubles: the products of absurd settings may not fit in 64 bits, and only their size
  // relative to the machine matters here.
  const auto available = static_cast<double>(demands.available_bytes);
  const std::string machine = fmt::format("this machine has {}", format_bytes(available));
  for (const model::LayerPlan& layer : plan.layers) {
    const double state_bytes = static_cast<double>(layer.num_params) * sizeof(float) *
                               (2.0 + demands.optimizer_slots);  // values, grads, slots
    if (state_bytes > available) {
      return fmt::format("{} ({}): needs {} for its parameters, gradients and optimizer state; {}",
                         spec.layers[static_cast<size_t>(layer.index)].where.prefix(), layer.kind,
                         format_bytes(state_bytes), machine);
    }
    const double activation_bytes = static_cast<double>(demands.micro_batch_rows) *
                                    static_cast<double>(layer.output_bytes) * 2.0;  // + grad
    if (activation_bytes > available) {
      return fmt::format(
          "{}: one micro-batch of {} examples needs {} for the output of layer {} ({}) and its "
          "gradient; {}",
          demands.batch_key, demands.micro_batch_rows, format_bytes(activation_bytes), layer.index,
          layer.kind, machine);
    }
  }
  if (static_cast<double>(demands.dataset_bytes) > available) {
    return fmt::format("{}: the dataset needs {} in memory; {}", demands.dataset_key,
                       format_bytes(static_cast<double>(demands.dataset_bytes)), machine);
  }
  return std::nullopt;
}

}  // namespace mpipe::plan
