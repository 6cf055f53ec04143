// Internal to lib/comm: the state behind a Watchdog, shared by its wait loop and its roll call.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/mpi_handles.h"
#include "comm/watchdog.h"

namespace mpipe::comm {

using WatchClock = std::chrono::steady_clock;

// One WatchScope in progress.
struct Activity {
  std::string text;  // "step 12"
  WaitPhase phase = WaitPhase::kLong;
  WatchClock::time_point start;
  double nested_long_s = 0.0;  // time spent in long scopes inside this one
};

// An answer to a roll call, in flight (its text must stay put until the send completes).
struct RollCallAnswer {
  std::string text;
  MPI_Request request = MPI_REQUEST_NULL;
};

struct Watchdog::State {
  int rank = 0;
  int size = 1;
  DeadlinePolicy policy;
  const std::atomic<bool>* stop_requested = nullptr;
  const std::atomic<int>* stop_signal = nullptr;
  std::vector<std::string> hosts;  // by world rank; empty until the handshake
  std::optional<Topology> topology;
  std::vector<Activity> activities;  // innermost last
  std::string base_activity = "start-up";
  bool fired = false;
  double spin_s = 0.05;      // a wait polls without sleeping this long first (set_spin_seconds)
  bool stop_warned = false;  // the warning that a stop request waits for a wait, logged once
  // The wait in progress, for answers to roll calls.
  const PendingOp* waiting = nullptr;
  WatchClock::time_point wait_start;
  WatchClock::time_point last_wait_end;  // of the last polled wait that completed (or creation)
  // Ranks whose roll call came before this rank's own wait expired: their waits expired first.
  std::vector<int> called_before_expiry;
  // Roll call: a communicator of its own (a duplicate of the world) once enable_roll_call made it;
  // before, the world's point-to-point messages (no mpipe message uses them before start-up's
  // first collective, the identity exchange, and roll calls never after).
  MPI_Comm roll_comm = MPI_COMM_NULL;
  bool roll_comm_owned = false;  // the duplicate, freed by the destructor
  int roll_calls = 0;            // started by this rank (numbers the answer tags)
  int ping_payload = 0;          // sent with every ping; lives as long as the pings may
  std::vector<std::unique_ptr<RollCallAnswer>> answers;

  WaitPhase phase() const {
    return activities.empty() ? WaitPhase::kLong : activities.back().phase;
  }
  // "step 12", "step 10: checkpoint", "after step 100: evaluation", "start-up".
  std::string activity() const {
    std::string text;
    if (activities.empty() || activities.front().phase != WaitPhase::kStep) text = base_activity;
    for (const Activity& activity : activities) {
      text += (text.empty() ? "" : ": ") + activity.text;
    }
    return text;
  }
};

struct WatchdogInternals {
  static Watchdog::State& state(Watchdog& watchdog) { return *watchdog.state_; }
};

// "rank 1 (pipeline rank 1, host node7)".
std::string describe_rank(const Watchdog::State& state, int world_rank);

// What `op` waits for: "the gradient of micro-batch 3 from rank 1 (pipeline rank 1, host node7)",
// "an allreduce over the world, with rank 1 (pipeline rank 1, host node7)".
std::string describe_wait(const Watchdog::State& state, const PendingOp& op);

// Answers the roll calls that arrived (what this rank waits for, or that it is ending the job),
// and reaps finished answers.
void answer_roll_calls(Watchdog& watchdog);

// How the answer to a roll call starts: "" while this rank waits; once its own wait expired, that
// it ends the job and reports it, or leaves the report to a rank that called it first.
std::string_view ending_answer_prefix(const Watchdog::State& state);

// Whether an answer to a roll call says the rank's own wait expired and it reports it.
bool reports(const std::string& answer);

// Whether this rank, whose wait expired, leaves the job's one line to another rank: one whose
// roll call reached this rank before its own wait expired (that one expired first), or a lower
// rank whose wait expired about when this one's did and that reports (it answered so); or, when
// this rank was itself stopped and no rank answers, the peers that gave up on it. Never true for
// everyone alike: the first rule points back in time, the second down the ranks, and only to a
// rank that the first does not hold back, so no chain of ranks each leaving the report to the
// next closes on itself (a rank called first by a second that was called first by a third, which
// reached the first only once the first had expired, left it all to nobody: 60 s and three
// lines).
bool leaves_the_report(const Watchdog::State& state,
                       const std::vector<std::optional<std::string>>& answers, bool was_stopped);

// Asks every other rank what it waits for and collects the answers for up to `window_s` seconds
// (answering others meanwhile). By world rank: the answer, or nothing for a rank that did not
// answer (and for this rank). Empty in a world of one rank.
std::vector<std::optional<std::string>> roll_call(Watchdog& watchdog, double window_s);

}  // namespace mpipe::comm
