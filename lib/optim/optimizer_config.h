// Optimizer and learning-rate schedule settings (the `optimizer:` section of an experiment).
#pragma once

#include <cstdint>

#include "core/enum_names.h"

namespace mpipe::optim {

enum class OptimizerKind { kSgd, kAdam, kAdamW };
enum class LrScheduleKind { kConstant, kStep, kCosine, kLinear, kWsd, kInverseSqrt };
inline constexpr EnumNames<OptimizerKind, 3> kOptimizerNames{{{"sgd", OptimizerKind::kSgd},
                                                              {"adam", OptimizerKind::kAdam},
                                                              {"adamw", OptimizerKind::kAdamW}}};
inline constexpr EnumNames<LrScheduleKind, 6> kLrScheduleNames{
    {{"constant", LrScheduleKind::kConstant},
     {"step", LrScheduleKind::kStep},
     {"cosine", LrScheduleKind::kCosine},
     {"linear", LrScheduleKind::kLinear},
     {"wsd", LrScheduleKind::kWsd},
     {"inverse_sqrt", LrScheduleKind::kInverseSqrt}}};

struct LrScheduleConfig {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  int64_t warmup_steps = 0;  // linear warm-up from 0 (all kinds)
  int64_t step_size = 1000;  // kStep: multiply by gamma every step_size steps
  double gamma = 0.1;        // kStep
  double min_lr = 0.0;       // kCosine, kLinear, kWsd: the value reached at total_steps
  // kWsd: the number of final steps that decay; 0 = decay_fraction of total_steps.
  int64_t decay_steps = 0;
  double decay_fraction = 0.2;
  // The schedule's length (kCosine, kLinear and kWsd reach min_lr there); 0 = the run's
  // train.steps. A resumed run keeps the length it started with (see schedule_steps).
  int64_t total_steps = 0;
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  double lr = 1e-3;
  double momentum = 0.0;  // SGD
  bool nesterov = false;  // SGD
  double weight_decay = 0.0;
  // Parameters of rank < 2 (biases, norm gains) and embedding tables are not decayed.
  bool decay_exempt = false;
  double beta1 = 0.9;  // Adam, AdamW
  double beta2 = 0.999;
  double eps = 1e-8;
  double clip_norm = 0.0;  // global gradient-norm clipping; 0 = off
  // ZeRO-1: each data-parallel replica holds and updates the state of its own shard of every
  // stage's parameters (optim/replica_shard.h), then the replicas allgather the values. The
  // same bits as without; a no-op with one replica.
  bool shard_across_replicas = false;
  LrScheduleConfig schedule;
};

}  // namespace mpipe::optim
