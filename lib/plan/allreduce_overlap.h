// When a rank's data-parallel allreduce ends: its layers' gradients start as each is complete
// and queue on the rank's link, behind the compute that is still running.
#pragma once

#include <vector>

namespace mpipe::plan {

// One layer's gradient: the time its last contribution is complete, and the seconds its
// allreduce occupies the rank's link.
struct GradientTransfer {
  double ready = 0.0;
  double transfer = 0.0;
};

// The time the last of `gradients` has crossed the link, each started at its ready time or
// when the one before it (in the given order, the order the ranks start them) has crossed,
// whichever is later; 0 when there are none.
double allreduce_end(const std::vector<GradientTransfer>& gradients);

}  // namespace mpipe::plan
