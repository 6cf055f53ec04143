// Tests of which rank reports an expired wait (pure: no MPI): the first rank whose wait expired,
// or the lowest of those that expired together; a rank that was itself stopped and that nobody
// answers leaves the report to the peers that gave up on it.
#include <gtest/gtest.h>

#include "comm/watchdog_state.h"

namespace mpipe::comm {
namespace {

using Answers = std::vector<std::optional<std::string>>;

Watchdog::State rank_of(int rank, int size) {
  Watchdog::State state;
  state.rank = rank;
  state.size = size;
  state.fired = true;
  return state;
}

const std::string kWaiting = "waiting 3.1 s for the gradient of micro-batch 0 from rank 2";
const std::string kEnding = "ending the job after waiting 3.0 s for a barrier over the world";

TEST(ReportElection, ARankWhoseWaitAloneExpiredReports) {
  const Watchdog::State state = rank_of(1, 4);
  EXPECT_TRUE(is_ending(kEnding));
  EXPECT_FALSE(is_ending(kWaiting));
  EXPECT_FALSE(leaves_the_report(state, {kWaiting, std::nullopt, kWaiting, std::nullopt}, false));
}

TEST(ReportElection, ARankCalledByAnotherBeforeItsOwnWaitExpiredLeavesItTheReport) {
  Watchdog::State state = rank_of(0, 4);
  state.called_before_expiry = {2};  // rank 2's wait expired first, and it reports
  EXPECT_TRUE(leaves_the_report(state, {std::nullopt, std::nullopt, kEnding, kWaiting}, false));
}

TEST(ReportElection, OfRanksWhoseWaitsExpiredTogetherTheLowestReports) {
  // Ranks 1 and 3 are ending the job; rank 0 waits, rank 2 is stopped.
  EXPECT_FALSE(
      leaves_the_report(rank_of(1, 4), {kWaiting, std::nullopt, std::nullopt, kEnding}, false));
  EXPECT_TRUE(
      leaves_the_report(rank_of(3, 4), {kWaiting, kEnding, std::nullopt, std::nullopt}, false));
}

TEST(ReportElection, AStoppedRankThatNobodyAnswersLeavesTheReportToItsPeers) {
  EXPECT_TRUE(leaves_the_report(rank_of(1, 2), {std::nullopt, std::nullopt}, true));
  EXPECT_TRUE(leaves_the_report(rank_of(1, 2), {}, true));  // before roll calls were enabled
  // Somebody answers: its peers did not give up on it, so it reports what it waits for.
  EXPECT_FALSE(leaves_the_report(rank_of(1, 3), {kWaiting, std::nullopt, std::nullopt}, true));
  // Alone in the world, it reports.
  EXPECT_FALSE(leaves_the_report(rank_of(0, 1), {}, true));
}

}  // namespace
}  // namespace mpipe::comm
