// When a rank's data-parallel allreduce ends: gradients queued on the link as they complete.
#include "plan/allreduce_overlap.h"

#include <algorithm>

namespace mpipe::plan {

double allreduce_end(const std::vector<GradientTransfer>& gradients) {
  double link_free = 0.0;
  for (const GradientTransfer& g : gradients) link_free = std::max(link_free, g.ready) + g.transfer;
  return link_free;
}

}  // namespace mpipe::plan
