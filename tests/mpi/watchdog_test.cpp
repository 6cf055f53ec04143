// Multi-rank tests of the watchdog (4 ranks): waits with deadlines, the one-line report naming the
// peer and the ranks that do not answer the roll call, stop requests, suspended time, abandoned
// requests, and the start-up agreement.
#include "comm/watchdog.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <thread>

#include "comm/communicator.h"
#include "comm/handshake.h"
#include "core/error.h"

namespace mpipe::comm {
namespace {

using namespace std::chrono_literals;

int world_rank() { return Communicator::world().rank(); }

constexpr double kReportDeferral = 2.0;  // how long a rank leaves the report to another

// Deadlines in seconds: the start-up one applies outside training steps and in warm-up steps.
CommConfig deadlines(double startup_s, double stop_grace_s = 0.0) {
  return {.timeout_s = 0.0,
          .startup_timeout_s = startup_s,
          .stop_grace_s = stop_grace_s,
          .report_deferral_s = kReportDeferral};
}

// The world with a watchdog of `config`, hosts "h0".."h3" and roll calls enabled, once every rank
// is there (under a long deadline: the ranks leave the previous test at different times).
struct WatchedWorld {
  explicit WatchedWorld(const CommConfig& config)
      : world(Communicator::world()), watchdog(world, deadlines(30.0)) {
    world.set_watchdog(&watchdog);
    watchdog.set_hosts({"h0", "h1", "h2", "h3"});
    watchdog.enable_roll_call(world);
    world.barrier();
    watchdog.configure(config);
  }
  Communicator world;
  Watchdog watchdog;
};

// `text` with every number of seconds ("12.3 s") written "S s".
std::string without_seconds(const std::string& text) {
  std::string result;
  for (size_t i = 0; i < text.size();) {
    size_t end = i;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    const bool seconds = end > i && text.compare(end, 1, ".") == 0 && end + 1 < text.size() &&
                         std::isdigit(static_cast<unsigned char>(text[end + 1])) &&
                         text.compare(end + 2, 2, " s") == 0;
    if (seconds) {
      result += "S";
      i = end + 2;
    } else {
      result += text.substr(i, std::max<size_t>(end - i, 1));
      i = std::max(end, i + 1);
    }
  }
  return result;
}

// The message of the WatchdogTimeout `action` throws, with the seconds written "S".
template <typename Action>
std::string timeout_message(Action&& action) {
  try {
    action();
  } catch (const WatchdogTimeout& e) {
    return without_seconds(e.what());
  }
  return "(no timeout)";
}

TEST(Watchdog, AMessageThatArrivesBeforeTheDeadlineIsReceived) {
  WatchedWorld w(deadlines(5.0));
  const int rank = w.world.rank();
  std::vector<float> got(2);
  Request receive = w.world.irecv(got, (rank + 3) % 4, 1, "the activations of micro-batch 0");
  if (rank == 2) std::this_thread::sleep_for(300ms);  // late, but in time
  Request send = w.world.isend(std::vector<float>{float(rank), 1.f}, (rank + 1) % 4, 1);
  EXPECT_NO_THROW(receive.wait());
  send.wait();
  EXPECT_EQ(got, (std::vector<float>{float((rank + 3) % 4), 1.f}));
  EXPECT_FALSE(w.watchdog.fired());
}

TEST(Watchdog, AReceivePastItsDeadlineNamesThePeerTheMessageAndTheStep) {
  // Rank 0 gives up after 0.3 s. Rank 1 sends only after 2.5 s without calling MPI, so it does
  // not answer the roll call; ranks 2 and 3 wait in a barrier meanwhile, and answer.
  WatchedWorld w(deadlines(world_rank() == 0 ? 0.3 : 30.0));
  const int rank = w.world.rank();
  std::vector<float> got(1);
  if (rank == 0) {
    Request receive = w.world.irecv(got, 1, 7, "the gradient of micro-batch 3");
    {
      const WatchScope step(w.world, "step 12", WaitPhase::kStep);  // warm-up: start-up deadline
      EXPECT_EQ(timeout_message([&] { receive.wait(); }),
                "watchdog: step 12: waited S s for the gradient of micro-batch 3 from rank 1 "
                "(host h1), which does not answer; ending the job");
    }
    EXPECT_TRUE(w.watchdog.fired());
    w.watchdog.configure(deadlines(30.0));
    receive.wait();  // the request is still there: it completes once rank 1 sends
    EXPECT_EQ(got[0], 42.f);
  } else if (rank == 1) {
    std::this_thread::sleep_for(2500ms);
    w.world.isend(std::vector<float>{42.f}, 0, 7).wait();
  }
  w.world.barrier();
}

TEST(Watchdog, ACollectivePastItsDeadlineNamesTheRankThatDoesNotAnswerOnce) {
  // Ranks 0-2 wait in a barrier for rank 3, which sleeps 2.5 s without calling MPI. Their waits
  // expire together: one of them reports at once (the others answer that they are ending the job,
  // so it does not name them); the other two leave the report to it, and would report only if the
  // job still ran after the deferral (here, where nobody calls MPI_Abort).
  WatchedWorld w(deadlines(world_rank() == 3 ? 30.0 : 0.3));
  double seconds = 0.0;
  if (w.world.rank() == 3) {
    std::this_thread::sleep_for(2500ms);
  } else {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(timeout_message([&] { w.world.barrier(); }),
              "watchdog: start-up: waited S s for a barrier over the world (4 ranks); rank 3 "
              "(host h3) does not answer; ending the job");
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    w.watchdog.configure(deadlines(30.0));
  }
  // The others abandoned their barrier (left it to MPI): rank 3's completes it.
  if (w.world.rank() == 3) w.world.barrier();
  const std::vector<double> all = w.world.allgatherv(std::vector<double>{seconds});
  EXPECT_EQ(
      std::count_if(all.begin(), all.begin() + 3, [](double s) { return s < kReportDeferral; }), 1);
  w.world.barrier();
}

TEST(Watchdog, BeforeItsRollCallCommunicatorExistsTheRanksThatDoNotAnswerAreNamed) {
  // As in start-up's first collective, the identity exchange: no hosts and no roll-call
  // communicator yet. Ranks 0-2 wait in a barrier for rank 3, which sleeps 2.5 s without calling
  // MPI; the roll call goes over the watched communicator's point-to-point messages (a split of
  // the world here, so that no late ping reaches another test).
  const Communicator world = Communicator::world();
  Communicator group = world.split(0, world.rank(), "the test group");
  Watchdog watchdog(group, deadlines(world.rank() == 3 ? 30.0 : 0.3));
  group.set_watchdog(&watchdog);
  if (group.rank() == 3) {
    std::this_thread::sleep_for(2500ms);
    group.barrier();
  } else {
    EXPECT_EQ(timeout_message([&] { group.barrier(); }),
              "watchdog: start-up: waited S s for a barrier over the test group (4 ranks); rank 3 "
              "does not answer; ending the job");
  }
  world.barrier();
}

TEST(Watchdog, AWaitSaysWhatTheAnsweringPeerWaitsFor) {
  // Rank 0 waits for rank 1, which waits for rank 2, which sleeps without calling MPI.
  const int me = world_rank();
  WatchedWorld w(deadlines(me == 0 ? 0.3 : 30.0));
  std::vector<float> got(1);
  if (me == 0) {
    Request receive = w.world.irecv(got, 1, 3, "the gradient of micro-batch 0");
    EXPECT_EQ(timeout_message([&] { receive.wait(); }),
              "watchdog: start-up: waited S s for the gradient of micro-batch 0 from rank 1 (host "
              "h1), which is waiting S s for the gradient of micro-batch 0 from rank 2 (host h2); "
              "rank 2 (host h2) does not answer; ending the job");
    w.watchdog.configure(deadlines(30.0));
    receive.wait();
  } else if (me == 1) {
    w.world.irecv(got, 2, 3, "the gradient of micro-batch 0").wait();
    w.world.isend(got, 0, 3).wait();
  } else if (me == 2) {
    std::this_thread::sleep_for(2500ms);
    w.world.isend(std::vector<float>{1.f}, 1, 3).wait();
  }
  w.world.barrier();
}

TEST(Watchdog, AStopRequestEndsAHungStepWaitAfterTheGrace) {
  std::atomic<bool> stop{false};
  WatchedWorld w(deadlines(10.0, 0.2));  // the roll call then waits 1 s for answers
  w.watchdog.set_stop_flag(&stop);
  std::vector<float> got(1);
  if (w.world.rank() == 0) {
    stop = true;
    Request receive = w.world.irecv(got, 1, 5);
    const auto start = std::chrono::steady_clock::now();
    {
      const WatchScope step(w.world, "step 5", WaitPhase::kStep);
      EXPECT_EQ(timeout_message([&] { receive.wait(); }),
                "watchdog: step 5: stop requested, but still waiting after S s for a message "
                "(tag 5) from rank 1 (host h1), which does not answer; cannot checkpoint; ending "
                "the job");
    }
    // Far before the 10-s deadline: the grace (0.2 s) and the roll call (1 s).
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    stop = false;
    receive.wait();
  } else if (w.world.rank() == 1) {
    std::this_thread::sleep_for(2500ms);
    w.world.isend(std::vector<float>{1.f}, 0, 5).wait();
  }
  w.world.barrier();
}

TEST(Watchdog, AStopRequestDoesNotCutShortAWaitOutsideSteps) {
  std::atomic<bool> stop{true};
  WatchedWorld w(deadlines(30.0, 0.2));
  w.watchdog.set_stop_flag(&stop);
  std::vector<float> got(1);
  if (w.world.rank() == 0) {
    Request receive = w.world.irecv(got, 1, 6);
    const WatchScope checkpoint(w.world, "checkpoint", WaitPhase::kLong);
    EXPECT_NO_THROW(receive.wait());  // a checkpoint still completes (with a warning)
  } else if (w.world.rank() == 1) {
    std::this_thread::sleep_for(700ms);
    w.world.isend(std::vector<float>{1.f}, 0, 6).wait();
  }
  w.world.barrier();
}

// Rank 1 stops rank 0 (SIGSTOP) 0.2 s into its wait for tag `tag`, resumes it 1.5 s later and
// sends the message `send_after` after the wait began.
void stop_rank0_during_a_wait(WatchedWorld& w, int tag, std::chrono::milliseconds send_after) {
  std::vector<double> pids = w.world.allgatherv(std::vector<double>{double(getpid())});
  if (w.world.rank() != 1) return;
  const auto rank0 = static_cast<pid_t>(pids[0]);
  std::this_thread::sleep_for(200ms);
  kill(rank0, SIGSTOP);
  std::this_thread::sleep_for(1500ms);
  kill(rank0, SIGCONT);
  std::this_thread::sleep_for(send_after - 1700ms);
  w.world.isend(std::vector<float>{1.f}, 0, tag).wait();
}

TEST(Watchdog, TimeThisProcessWasStoppedIsNotWaiting) {
  // A 1-s deadline; rank 0 is stopped for 1.5 s and has the message 0.4 s of its own time later.
  WatchedWorld w(deadlines(world_rank() == 0 ? 1.0 : 30.0));
  std::vector<float> got(1);
  Request receive;
  if (w.world.rank() == 0) receive = w.world.irecv(got, 1, 8);
  stop_rank0_during_a_wait(w, 8, 1900ms);
  if (w.world.rank() == 0) {
    EXPECT_NO_THROW(receive.wait());
  }
  w.world.barrier();
}

TEST(Watchdog, ARankThatWasStoppedSaysSoWhenItsWaitExpires) {
  WatchedWorld w(deadlines(world_rank() == 0 ? 1.0 : 30.0));
  std::vector<float> got(1);
  Request receive;
  if (w.world.rank() == 0) receive = w.world.irecv(got, 1, 10);
  stop_rank0_during_a_wait(w, 10, 5000ms);  // after rank 0's roll call (1 s) is over
  if (w.world.rank() == 0) {
    EXPECT_EQ(timeout_message([&] { receive.wait(); }),
              "watchdog: start-up: waited S s for a message (tag 10) from rank 1 (host h1), which "
              "does not answer; this rank was itself stopped for S s; ending the job");
    w.watchdog.configure(deadlines(30.0));
    receive.wait();
  }
  w.world.barrier();
}

TEST(Watchdog, ARankStoppedOutsideAWaitSaysSoWhenItsNextWaitExpires) {
  // Rank 1 stops rank 0 (SIGSTOP) while it computes (sleeps), resumes it, and sends only after
  // rank 0's wait for the message has expired; ranks 2 and 3 answer the roll call from a barrier,
  // so rank 0 reports, saying it was stopped.
  WatchedWorld w(deadlines(world_rank() == 0 ? 1.0 : 30.0));
  std::vector<double> pids = w.world.allgatherv(std::vector<double>{double(getpid())});
  std::vector<float> got(1);
  if (w.world.rank() == 0) {
    std::this_thread::sleep_for(1000ms);  // stopped from 0.2 s to 1.7 s of it
    Request receive = w.world.irecv(got, 1, 11);
    EXPECT_EQ(timeout_message([&] { receive.wait(); }),
              "watchdog: start-up: waited S s for a message (tag 11) from rank 1 (host h1), which "
              "does not answer; this rank was itself stopped, and resumed S s ago; ending the job");
    w.watchdog.configure(deadlines(30.0));
    receive.wait();
  } else if (w.world.rank() == 1) {
    const auto rank0 = static_cast<pid_t>(pids[0]);
    std::this_thread::sleep_for(200ms);
    kill(rank0, SIGSTOP);
    std::this_thread::sleep_for(1500ms);
    kill(rank0, SIGCONT);
    std::this_thread::sleep_for(3000ms);  // rank 0's wait (1 s) and roll call (1 s) are over
    w.world.isend(std::vector<float>{1.f}, 0, 11).wait();
  }
  w.world.barrier();
}

TEST(Watchdog, APendingReceiveIsAbandonedWhenAnExceptionUnwindsIt) {
  // Without the abandon, the receive's destructor would wait for a message that never comes.
  WatchedWorld w(deadlines(30.0));
  std::vector<float> got(1);
  if (w.world.rank() == 0) {
    EXPECT_THROW(
        {
          Request receive = w.world.irecv(got, 1, 9);
          throw Error("a failure in the middle of a step");
        },
        Error);
  }
  w.world.barrier();
}

TEST(Watchdog, SplitGroupsShareItAndMessagesNameTheStage) {
  WatchedWorld w(deadlines(world_rank() == 0 ? 0.3 : 30.0));
  const Groups groups = split_world(w.world, make_topology(w.world.rank(), 4, 2, 2));
  EXPECT_EQ(groups.pipeline.watchdog(), &w.watchdog);
  EXPECT_EQ(w.watchdog.describe_rank(3), "rank 3 (pipeline rank 1, replica 1, host h3)");
  if (w.world.rank() == 0) {
    EXPECT_EQ(timeout_message([&] { groups.data_parallel.barrier(); }),
              "watchdog: start-up: waited S s for a barrier over the data-parallel group of "
              "pipeline rank 0 (2 ranks); rank 2 (pipeline rank 0, replica 1, host h2) does not "
              "answer; ending the job");
    w.watchdog.configure(deadlines(30.0));
  } else if (w.world.rank() == 2) {
    std::this_thread::sleep_for(2500ms);
    groups.data_parallel.barrier();
  }
  w.world.barrier();  // rank 2's barrier completed the one rank 0 abandoned
}

TEST(StartUp, IdentitiesOfEveryRankAreExchanged) {
  WatchedWorld w(deadlines(30.0));
  const RankIdentity mine = own_identity("9.9.9-test");
  const std::vector<RankIdentity> all = exchange_identities(w.world, mine);
  ASSERT_EQ(all.size(), 4u);
  for (const RankIdentity& rank : all) {
    EXPECT_EQ(rank.version, "9.9.9-test");
    EXPECT_EQ(rank.mpi_library, mine.mpi_library);
    EXPECT_FALSE(rank.host.empty());
  }
  EXPECT_FALSE(identity_mismatch(all));
}

// What every rank throws from require_same_as_rank0(things), or "(no error)".
std::string refusal(const Communicator& world, const std::vector<SameEverywhere>& things) {
  try {
    require_same_as_rank0(world, things);
  } catch (const AgreedError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "(no error)";
}

TEST(StartUp, ARankWhoseTextDiffersFromRank0sIsRefusedOnEveryRank) {
  WatchedWorld w(deadlines(30.0));
  const int rank = w.world.rank();
  const std::string layout = rank == 1 || rank == 3 ? "1 x 4" : "2 x 2";
  EXPECT_EQ(refusal(w.world, {{.what = "config", .mine = "same", .difference = {}},
                              {.what = "layout", .mine = layout, .difference = {}}}),
            "rank 1 (host h1): layout differs from rank 0's: 1 x 4 here, 2 x 2 on rank 0");
  // A comparison of its own says what differs; the lowest rank that differs speaks for all.
  auto first_letter = [](const std::string& mine, const std::string& theirs) {
    return mine == theirs ? std::nullopt
                          : std::optional<std::string>(fmt::format("{} vs {}", mine[0], theirs[0]));
  };
  const std::string config = rank >= 2 ? "xyz" : "abc";
  EXPECT_EQ(refusal(w.world, {{.what = "config", .mine = config, .difference = first_letter}}),
            "rank 2 (host h2): config differs from rank 0's: x vs a");
  EXPECT_EQ(refusal(w.world, {{.what = "config", .mine = "abc", .difference = first_letter}}),
            "(no error)");
}

}  // namespace
}  // namespace mpipe::comm
