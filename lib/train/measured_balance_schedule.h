// MeasuredBalanceSchedule: after which steps pipeline.balance: measured checks the partition.
#pragma once

#include <cstdint>

namespace mpipe::train {

// The first check is `after` steps after the process's first step (0, or the step a resumed run
// starts from: it starts from the `auto` partition and measures again), then every `every` steps
// (0: none).
class MeasuredBalanceSchedule {
 public:
  MeasuredBalanceSchedule(int64_t after, int64_t every) : after_(after), every_(every) {}

  // Counts the steps from `first_step` on (a resumed run's): the first check comes `after`
  // steps later.
  void start_at(int64_t first_step) { next_ = first_step + after_; }
  // Whether a check is due after `done` steps (then the next is `every` steps later).
  bool due(int64_t done);

 private:
  int64_t after_;
  int64_t every_;
  int64_t next_ = after_;  // -1: no further check
};

}  // namespace mpipe::train
