// A user's stop signals to `mpipe supervise` (see user_stop.h).
#include "supervise/user_stop.h"

#include <csignal>

namespace mpipe::supervise {

int UserStop::to_pass_on(bool under_way) {
  const int signals = signals_.load();
  if (signals == passed_on_) return 0;
  const bool first = passed_on_ == 0 && signals == 1;
  if (first && !under_way) return 0;
  passed_on_ = signals;
  return first ? SIGUSR1 : SIGTERM;
}

}  // namespace mpipe::supervise
