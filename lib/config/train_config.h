// Training-loop settings (the `train:` section of an experiment). Owned by lib/train, kept here
// below it: lib/train reads the whole config::Experiment, which holds them.
#pragma once

#include <cstdint>

#include "core/enum_names.h"
#include "kernels/precision.h"

namespace mpipe::train {

// What a step with a non-finite loss or gradient does.
enum class OnNonFinite {
  kStop,  // end the run with an error naming the step, stage and first layer affected
  kSkip,  // drop that step's update (counted in metrics); stop after max_skips_in_a_row
};
inline constexpr EnumNames<OnNonFinite, 2> kOnNonFiniteNames{
    {{"stop", OnNonFinite::kStop}, {"skip", OnNonFinite::kSkip}}};

struct TrainConfig {
  int64_t steps = 100;          // optimizer steps; 0 = export the initial weights only
  int64_t batch_size = 64;      // global mini-batch: all micro-batches of all replicas
  uint64_t seed = 1;            // init, data order, dropout
  int64_t eval_every = 0;       // 0 = evaluate at the end only
  int64_t eval_batches = 0;     // 0 = the whole evaluation split
  int64_t eval_batch_size = 0;  // 0 = batch_size
  // data.dataset: pairs: BLEU and chrF of greedy translations of the held-out split's first this
  // many pairs at each evaluation; 0 = none.
  int64_t eval_bleu_sentences = 200;
  OnNonFinite on_nonfinite = OnNonFinite::kStop;
  int64_t max_skips_in_a_row = 10;  // kSkip: this many non-finite steps in a row end the run
  // GEMMs and convolutions in f32 or bf16 (f32 accumulation, f32 weights and optimizer state).
  kernels::Precision precision = kernels::Precision::kF32;
};

}  // namespace mpipe::train
