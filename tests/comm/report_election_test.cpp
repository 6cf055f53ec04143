// Tests of which rank reports an expired wait (pure: no MPI): the first rank whose wait expired,
// or the lowest of those that expired together, and always one; a rank that was itself stopped
// and that nobody answers leaves the report to the peers that gave up on it.
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
  EXPECT_TRUE(reports(kEnding));
  EXPECT_FALSE(reports(kWaiting));
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

// What `state` answers a roll call once its own wait expired.
std::string answer_of(const Watchdog::State& state) {
  return std::string(ending_answer_prefix(state)) + "waiting 10.0 s for an allgather";
}

TEST(ReportElection, ARankCalledFirstAnswersThatAnotherReports) {
  Watchdog::State state = rank_of(1, 4);
  EXPECT_EQ(answer_of(state), "ending the job after waiting 10.0 s for an allgather");
  state.called_before_expiry = {2};
  EXPECT_EQ(answer_of(state),
            "ending the job (another rank reports it) after waiting 10.0 s for an allgather");
  EXPECT_FALSE(reports(answer_of(state)));
  state.fired = false;
  EXPECT_EQ(answer_of(state), "waiting 10.0 s for an allgather");
}

// e2e.watchdog in the suite: ranks 0-2 wait for stopped rank 3 in one allgather. Rank 2 expires
// first and calls 1 before 1 expires; 1 calls 0 before 0 expires; 2's call reaches 0 only after 0
// expired, so 0 answers it that it is ending the job. Each left the report to another (2 to the
// lower 0), and all three reported 60 s later. Now 0 answers that rank 1 reports, and 2 reports.
TEST(ReportElection, RanksWhoseCallsCrossedStillElectOne) {
  Watchdog::State rank0 = rank_of(0, 4), rank1 = rank_of(1, 4), rank2 = rank_of(2, 4);
  rank1.called_before_expiry = {2};
  rank0.called_before_expiry = {1};
  const std::optional<std::string> stopped;
  const bool leaves0 =
      leaves_the_report(rank0, {stopped, answer_of(rank1), answer_of(rank2), stopped}, false);
  const bool leaves1 =
      leaves_the_report(rank1, {answer_of(rank0), stopped, answer_of(rank2), stopped}, false);
  const bool leaves2 =
      leaves_the_report(rank2, {answer_of(rank0), answer_of(rank1), stopped, stopped}, false);
  EXPECT_TRUE(leaves0);
  EXPECT_TRUE(leaves1);
  EXPECT_FALSE(leaves2);
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
