// When a rank posts its receives and releases its sends in one step: the one answer both the
// executor and the memory walk use.
#pragma once

#include <vector>

#include "plan/op.h"
#include "plan/placement.h"

namespace mpipe::plan {

// The fewest receives a rank keeps posted beyond those consumed (receives_posted's `ahead`, at
// least kReceivesAhead) with which every rank of `programs` runs its step to the end
// (StepProgress::deadlock finds none waiting forever; one walk built for the whole search). Posting
// more never makes a rank wait longer, so the search ends at worst with every receive posted from
// the start. ZB-V needs more than 2 from K = 5 on (its warm-up sends up to 2(K-r)-1 activations
// down before the next rank answers).
int receives_ahead(const std::vector<Program>& programs, const Placement& placement);

// Per op of one rank's program: the receives posted when it starts (receives_posted at
// receives_ahead) and the sends released once it has run (send_releases).
struct RankMessages {
  int receives_ahead = 0;
  std::vector<int> receives_posted;
  std::vector<int> sends_released;
};
// Every rank's, in rank order (receives_ahead searched once for the step).
std::vector<RankMessages> step_messages(const std::vector<Program>& programs,
                                        const Placement& placement);

}  // namespace mpipe::plan
