// Multi-rank test of the clock offset measurement: ranks whose clocks are shifted by known
// amounts find those shifts within the error bound they report.
#include "comm/clock_offset.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "comm/communicator.h"

namespace mpipe::comm {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TEST(ClockOffset, FindsEachRanksShiftWithinItsRoundTrip) {
  const Communicator world = Communicator::world();
  // Rank r's clock runs 1000·r + 0.25 s ahead of the shared steady clock (rank 0's: 0.25 s).
  const double shift = world.rank() == 0 ? 0.25 : 1000.0 * world.rank() + 0.25;
  const ClockOffset offset =
      measure_clock_offset(world, [shift] { return steady_seconds() + shift; });
  if (world.rank() == 0) {
    EXPECT_EQ(offset.offset_s, 0.0);
    EXPECT_EQ(offset.uncertainty_s, 0.0);
    return;
  }
  // Every rank reads the same underlying clock, so rank 0's stamp lies inside the round trip
  // and the error is at most half of it (plus rounding of the doubles).
  EXPECT_GT(offset.uncertainty_s, 0.0);
  EXPECT_NEAR(offset.offset_s, 0.25 - shift, offset.uncertainty_s + 1e-9);
}

}  // namespace
}  // namespace mpipe::comm
