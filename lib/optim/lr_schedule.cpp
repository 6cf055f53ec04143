// Learning-rate schedule: warm-up followed by a constant, step or cosine decay.
#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace mpipe::optim {

double learning_rate(const OptimizerConfig& config, int64_t step, int64_t total_steps) {
  check(step >= 0, "learning_rate: step must be >= 0, got {}", step);
  const LrScheduleConfig& schedule = config.schedule;
  const double base = config.lr;
  if (step < schedule.warmup_steps) {
    return base * static_cast<double>(step + 1) / static_cast<double>(schedule.warmup_steps);
  }
  const int64_t after_warmup = step - schedule.warmup_steps;
  switch (schedule.kind) {
    case LrScheduleKind::kConstant:
      return base;
    case LrScheduleKind::kStep: {
      check(schedule.step_size >= 1, "learning_rate: step_size must be >= 1, got {}",
            schedule.step_size);
      const auto decays = static_cast<double>(after_warmup / schedule.step_size);
      return base * std::pow(schedule.gamma, decays);
    }
    case LrScheduleKind::kCosine: {
      const int64_t decay_steps = total_steps - schedule.warmup_steps;
      const double progress =
          decay_steps <= 0
              ? 1.0
              : std::clamp(static_cast<double>(after_warmup) / static_cast<double>(decay_steps),
                           0.0, 1.0);
      return schedule.min_lr +
             0.5 * (base - schedule.min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
    }
  }
  throw Error("learning_rate: unknown schedule kind");
}

int64_t schedule_steps(const OptimizerConfig& config, int64_t train_steps) {
  return config.schedule.total_steps > 0 ? config.schedule.total_steps : train_steps;
}

}  // namespace mpipe::optim
