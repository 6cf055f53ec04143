// Optimizer: the factory and the checks shared by every kind.
#include "optim/optimizer.h"

#include "core/error.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace mpipe::optim {

std::unique_ptr<Optimizer> Optimizer::make(const OptimizerConfig& config, int64_t num_params) {
  check(num_params >= 0, "optimizer: num_params must be >= 0, got {}", num_params);
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<Sgd>(config, num_params);
    case OptimizerKind::kAdam:
      return std::make_unique<Adam>(config, num_params, /*decoupled_weight_decay=*/false);
    case OptimizerKind::kAdamW:
      return std::make_unique<Adam>(config, num_params, /*decoupled_weight_decay=*/true);
  }
  throw Error("optimizer: unknown kind");
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, double lr) {
  const auto n = static_cast<size_t>(num_params_);
  check(params.size() == n && grads.size() == n,
        "optimizer: expected {} parameters and gradients, got {} and {}", n, params.size(),
        grads.size());
  update(params, grads, lr, steps_taken_ + 1);
  ++steps_taken_;
}

void Optimizer::set_steps_taken(int64_t steps) {
  check(steps >= 0, "optimizer: steps taken must be >= 0, got {}", steps);
  steps_taken_ = steps;
}

}  // namespace mpipe::optim
