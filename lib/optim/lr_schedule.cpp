// Learning-rate schedule: warm-up followed by a constant, step, cosine, linear, warmup-stable-decay
// or inverse-square-root schedule.
#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace mpipe::optim {

namespace {

// The rate `done` steps into a linear decay of `length` steps from `base` to `min_lr` (exactly
// `base` at its start and `min_lr` at its end or past it; length <= 0: over).
double linear_decay(double base, double min_lr, int64_t done, int64_t length) {
  const double progress =
      length <= 0 ? 1.0
                  : std::clamp(static_cast<double>(done) / static_cast<double>(length), 0.0, 1.0);
  return std::lerp(base, min_lr, progress);
}

}  // namespace

int64_t wsd_decay_steps(const LrScheduleConfig& schedule, int64_t total_steps) {
  if (schedule.decay_steps > 0) return schedule.decay_steps;
  return std::llround(schedule.decay_fraction * static_cast<double>(total_steps));
}

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
    case LrScheduleKind::kLinear:
      return linear_decay(base, schedule.min_lr, after_warmup, total_steps - schedule.warmup_steps);
    case LrScheduleKind::kWsd: {
      const int64_t decay_steps = wsd_decay_steps(schedule, total_steps);
      const int64_t decay_start = total_steps - decay_steps;
      if (step < decay_start) return base;
      return linear_decay(base, schedule.min_lr, step - decay_start, decay_steps);
    }
    case LrScheduleKind::kInverseSqrt: {
      const auto scale = static_cast<double>(std::max<int64_t>(schedule.warmup_steps, 1));
      return base * std::sqrt(scale / static_cast<double>(step + 1));
    }
  }
  throw Error("learning_rate: unknown schedule kind");
}

int64_t schedule_steps(const OptimizerConfig& config, int64_t train_steps) {
  return config.schedule.total_steps > 0 ? config.schedule.total_steps : train_steps;
}

}  // namespace mpipe::optim
