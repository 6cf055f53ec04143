// The train.on_nonfinite policy: what a run does after a step with a non-finite loss or gradient.
#pragma once

#include <cstdint>

#include "config/train_config.h"
#include "train/trainer.h"

namespace mpipe::train {

// A non-finite step applied no update (Trainer::step). `stop` ends the run there; `skip` goes
// on and ends it after max_skips_in_a_row such steps in a row. Every rank sees the same
// reports, so every rank throws the same AgreedError and exits cleanly.
class NonFiniteSteps {
 public:
  explicit NonFiniteSteps(const TrainConfig& train) : train_(train) {}

  // Throws AgreedError (exit code 1) when the run must stop; logs a skipped step on rank 0.
  void record(const StepReport& report, bool is_root);
  int64_t total() const { return total_; }  // non-finite steps so far

 private:
  const TrainConfig& train_;
  int64_t total_ = 0;
  int64_t in_a_row_ = 0;
};

}  // namespace mpipe::train
