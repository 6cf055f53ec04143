// The steps of pipeline.balance: measured's checks.
#include "train/measured_balance_schedule.h"

namespace mpipe::train {

bool MeasuredBalanceSchedule::due(int64_t done) {
  if (next_ < 0 || done != next_) return false;
  next_ = every_ > 0 ? done + every_ : -1;
  return true;
}

}  // namespace mpipe::train
