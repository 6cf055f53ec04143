// Learning-rate schedule: the rate of each optimizer step as a pure function of the step.
#pragma once

#include <cstdint>

#include "optim/optimizer_config.h"

namespace mpipe::optim {

// The learning rate of step `step` (0-based) of a run of `total_steps` steps: a linear warm-up
// (step+1)/warmup_steps * lr over the first warmup_steps steps, then
//   constant:     lr
//   step:         lr * gamma^floor((step - warmup_steps) / step_size)
//   cosine:       min_lr + (lr - min_lr) * (1 + cos(pi * progress)) / 2, where progress =
//                 (step - warmup_steps) / (total_steps - warmup_steps), clamped to [0, 1]
//                 (min_lr is reached at step total_steps)
//   linear:       lr + (min_lr - lr) * progress, with cosine's progress
//   wsd:          (warmup-stable-decay) lr until the last D = wsd_decay_steps steps, then
//                 lr + (min_lr - lr) * (step - (total_steps - D)) / D (min_lr at total_steps)
//   inverse_sqrt: lr * sqrt(max(warmup_steps, 1) / (step + 1)), which continues the warm-up's
//                 peak at step warmup_steps - 1 (with no warm-up: lr / sqrt(step + 1))
double learning_rate(const OptimizerConfig& config, int64_t step, int64_t total_steps);

// The number of final steps over which the wsd schedule decays: decay_steps if > 0, else
// decay_fraction * total_steps rounded to the nearest step.
int64_t wsd_decay_steps(const LrScheduleConfig& schedule, int64_t total_steps);
// The schedule's length for a run of `train_steps` steps: schedule.total_steps if set, else
// train_steps.
int64_t schedule_steps(const OptimizerConfig& config, int64_t train_steps);

}  // namespace mpipe::optim
