// Clock offsets between ranks, for timelines merged from several ranks (and hosts): each rank's
// offset from rank 0's clock, measured by ping-pongs.
#pragma once

#include <functional>

#include "comm/communicator.h"

namespace mpipe::comm {

struct ClockOffset {
  double offset_s = 0.0;       // rank 0's clock ≈ this rank's + offset_s
  double uncertainty_s = 0.0;  // half the round trip of the sample it came from (its error bound)
};

// Collective over `comm` (on a communicator split from it, so its tags are its own): rank 0
// answers `rounds` pings from each other rank in turn, stamping each with its clock `now`
// (seconds) as it arrives; a rank takes the sample with the shortest round trip (t0 sent, t1
// answered) and its offset stamp - (t0 + t1) / 2. Rank 0 gets {0, 0}.
ClockOffset measure_clock_offset(const Communicator& comm, const std::function<double()>& now,
                                 int rounds = 8);

}  // namespace mpipe::comm
