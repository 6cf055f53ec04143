// comm::Watchdog: deadlines for waits on peers, the wait loop, and the one-line report on expiry.
#include "comm/watchdog.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "comm/watchdog_state.h"
#include "core/error.h"

namespace mpipe::comm {
namespace {

using namespace std::chrono_literals;

constexpr auto kFirstPause = 20us;           // past the spin, sleep between polls, doubling ...
constexpr auto kLongestPause = 1ms;          // ... up to this
constexpr double kMinRollCallSeconds = 1.0;  // how long a roll call waits for answers:
constexpr double kMaxRollCallSeconds = 5.0;  // a tenth of the timeout, in [1 s, 5 s]
constexpr size_t kMembersListed = 3;         // ranks named in a description, then "N more"
// A gap this long between two polls (which are at most 1 ms apart) means this process itself was
// stopped (SIGSTOP, a paused VM): that time is not counted as waiting, so a rank that is resumed
// does not blame its peers for its own absence.
constexpr double kSuspendedSeconds = 1.0;
// A stop request that a wait still holds up this long after it was seen gets one warning.
constexpr double kStopWarningSeconds = 1.0;
constexpr auto kDeferralPause = 10ms;  // between the roll calls answered while deferring

// When this process last received SIGCONT (it was stopped, then resumed): CLOCK_MONOTONIC, the
// clock of steady_clock, in nanoseconds; 0 if never.
std::atomic<int64_t> resumed_at_ns{0};

void note_resumed(int /*signal*/) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  resumed_at_ns.store(int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec);
}

// Installs note_resumed for SIGCONT, once per process.
void watch_for_resumes() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction action {};
    action.sa_handler = note_resumed;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &action, nullptr);
  });
}

// When this process was last resumed after a stop, if it was.
std::optional<WatchClock::time_point> last_resume() {
  const int64_t ns = resumed_at_ns.load();
  if (ns == 0) return std::nullopt;
  return WatchClock::time_point(
      std::chrono::duration_cast<WatchClock::duration>(std::chrono::nanoseconds(ns)));
}

double seconds_between(WatchClock::time_point from, WatchClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// "an allreduce", "a broadcast from rank 0", from the MPI call that started a collective.
std::string collective_kind(const PendingOp& op) {
  const std::string call = op.call;
  const int root =
      op.root >= 0 && op.group ? op.group->world_ranks.at(static_cast<size_t>(op.root)) : op.root;
  if (call == "MPI_Iallreduce") return "an allreduce";
  if (call == "MPI_Ibarrier") return "a barrier";
  if (call == "MPI_Iallgather" || call == "MPI_Iallgatherv") return "an allgather";
  if (call == "MPI_Ibcast") return fmt::format("a broadcast from rank {}", root);
  return call;
}

// "(pipeline rank 1, host a)" of a world rank; empty when nothing is known about it.
std::string rank_details(const Watchdog::State& state, int world_rank) {
  std::vector<std::string> parts;
  if (const auto& topology = state.topology) {
    parts.push_back(fmt::format("pipeline rank {}", world_rank % topology->num_pipeline_ranks));
    if (topology->num_replicas > 1) {
      parts.push_back(fmt::format("replica {}", world_rank / topology->num_pipeline_ranks));
    }
  }
  if (world_rank >= 0 && static_cast<size_t>(world_rank) < state.hosts.size()) {
    parts.push_back("host " + state.hosts[static_cast<size_t>(world_rank)]);
  }
  return parts.empty() ? "" : fmt::format(" ({})", fmt::join(parts, ", "));
}

// "rank 1 (pipeline rank 1, host a)", "ranks 1 (...) and 2 (...)", "ranks 1 (...), 2 (...), 3 (...)
// and 5 more".
std::string describe_ranks(const Watchdog::State& state, const std::vector<int>& world_ranks) {
  std::string text = world_ranks.size() == 1 ? "rank " : "ranks ";
  const size_t listed = std::min(world_ranks.size(), kMembersListed);
  for (size_t i = 0; i < listed; ++i) {
    if (i > 0) text += i + 1 == listed && listed == world_ranks.size() ? " and " : ", ";
    text += std::to_string(world_ranks[i]) + rank_details(state, world_ranks[i]);
  }
  if (listed < world_ranks.size()) text += fmt::format(" and {} more", world_ranks.size() - listed);
  return text;
}

// The peer of a point-to-point operation, as a world rank; -1 for a collective.
int peer_world_rank(const PendingOp& op) {
  if (op.peer < 0) return -1;
  return op.group ? op.group->world_ranks.at(static_cast<size_t>(op.peer)) : op.peer;
}

// How a wait ended without its operation completing.
struct Expiry {
  double waited_s = 0.0;        // seconds waited (time this process was stopped not counted)
  double suspended_s = 0.0;     // seconds this process was stopped during the wait
  double timeout_s = 0.0;       // its deadline
  bool stop_requested = false;  // ended by a stop request after the grace, not by the deadline
  // Seconds since this process was resumed, when it was stopped since its last completed wait
  // (outside this wait: no gap between polls measured it).
  std::optional<double> resumed_s;
};

// The line a wait that expired ends the job with.
std::string expiry_message(Watchdog& watchdog, const PendingOp& op, const Expiry& expiry,
                           const std::vector<std::optional<std::string>>& answers) {
  const Watchdog::State& state = WatchdogInternals::state(watchdog);
  std::string text =
      expiry.stop_requested
          ? fmt::format("watchdog: {}: stop requested, but still waiting after {:.1f} s for {}",
                        state.activity(), expiry.waited_s, describe_wait(state, op))
          : fmt::format("watchdog: {}: waited {:.1f} s for {}", state.activity(), expiry.waited_s,
                        describe_wait(state, op));
  const int peer = peer_world_rank(op);
  std::vector<int> silent;
  for (size_t r = 0; r < answers.size(); ++r) {
    if (static_cast<int>(r) == state.rank) continue;
    if (!answers[r] && static_cast<int>(r) != peer) silent.push_back(static_cast<int>(r));
  }
  if (peer >= 0 && !answers.empty()) {
    const auto& answer = answers.at(static_cast<size_t>(peer));
    text += answer ? ", which is " + *answer : ", which does not answer";
  }
  if (!silent.empty()) {
    text += fmt::format("; {} {}", describe_ranks(state, silent),
                        silent.size() == 1 ? "does not answer" : "do not answer");
  } else if (!answers.empty() && (peer < 0 || answers.at(static_cast<size_t>(peer)))) {
    text += "; every rank answers";
  }
  // A rank that was itself stopped (and resumed, e.g. by mpirun tearing the job down) says so:
  // its peers may have given up on it.
  if (expiry.suspended_s > 0) {
    text += fmt::format("; this rank was itself stopped for {:.1f} s", expiry.suspended_s);
  } else if (expiry.resumed_s) {
    text +=
        fmt::format("; this rank was itself stopped, and resumed {:.1f} s ago", *expiry.resumed_s);
  }
  return text +
         (expiry.stop_requested ? "; cannot checkpoint; ending the job" : "; ending the job");
}

// Asks who is there, then throws the report, unless another rank makes it (leaves_the_report):
// then this rank answers roll calls while that rank ends the job (MPI_Abort ends this one too),
// and reports only if the job still runs after comm::CommConfig::report_deferral_s.
[[noreturn]] void expire(Watchdog& watchdog, const PendingOp& op, Expiry expiry) {
  Watchdog::State& state = WatchdogInternals::state(watchdog);
  state.fired = true;
  const auto resumed = last_resume();
  if (expiry.suspended_s == 0 && resumed && *resumed > state.last_wait_end) {
    expiry.resumed_s = seconds_between(*resumed, WatchClock::now());
  }
  const double window_s =
      std::clamp(0.1 * expiry.timeout_s, kMinRollCallSeconds, kMaxRollCallSeconds);
  const auto answers = roll_call(watchdog, window_s);
  const std::string line = expiry_message(watchdog, op, expiry, answers);
  const bool was_stopped = expiry.suspended_s > 0 || expiry.resumed_s;
  if (leaves_the_report(state, answers, was_stopped)) {
    spdlog::debug("{} (left to the rank that reports it)", line);
    const auto until = WatchClock::now() +
                       std::chrono::duration_cast<WatchClock::duration>(
                           std::chrono::duration<double>(state.policy.config().report_deferral_s));
    while (WatchClock::now() < until) {
      answer_roll_calls(watchdog);
      std::this_thread::sleep_for(kDeferralPause);
    }
  }
  throw WatchdogTimeout(line);
}

// Clears the wait in progress when the wait ends, however it ends.
class WaitingOn {
 public:
  WaitingOn(Watchdog::State& state, const PendingOp& op) : state_(state) {
    state_.waiting = &op;
    state_.wait_start = WatchClock::now();
  }
  ~WaitingOn() { state_.waiting = nullptr; }
  WaitingOn(const WaitingOn&) = delete;
  WaitingOn& operator=(const WaitingOn&) = delete;

 private:
  Watchdog::State& state_;
};

}  // namespace

Watchdog::Watchdog(const Communicator& world, const CommConfig& config)
    : state_(std::make_unique<State>()) {
  state_->rank = world.rank();
  state_->size = world.size();
  state_->policy = DeadlinePolicy(config);
  state_->last_wait_end = WatchClock::now();
  state_->roll_comm = world.handle_->comm;
  watch_for_resumes();
}

Watchdog::~Watchdog() {
  if (state_->roll_comm_owned && !mpi_finalized()) MPI_Comm_free(&state_->roll_comm);
}

void Watchdog::configure(const CommConfig& config) { state_->policy = DeadlinePolicy(config); }

const DeadlinePolicy& Watchdog::policy() const { return state_->policy; }

void Watchdog::set_stop_flag(const std::atomic<bool>* stop_requested) {
  state_->stop_requested = stop_requested;
}

void Watchdog::set_stop_signal(const std::atomic<int>* stop_signal) {
  state_->stop_signal = stop_signal;
}

void Watchdog::set_hosts(std::vector<std::string> hosts) { state_->hosts = std::move(hosts); }

void Watchdog::set_spin_seconds(double seconds) { state_->spin_s = seconds; }

void Watchdog::set_topology(const Topology& topology) { state_->topology = topology; }

std::string Watchdog::describe_rank(int world_rank) const {
  return comm::describe_rank(*state_, world_rank);
}

void Watchdog::enable_roll_call(const Communicator& world) {
  if (state_->roll_comm_owned) return;
  PendingOp op;
  op.call = "MPI_Comm_idup";
  op.watchdog = this;
  op.group = world.handle_->group;
  // Usable only once the duplication completes (the wait answers no roll call before that).
  MPI_Comm roll_comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_idup(world.handle_->comm, &roll_comm, &op.request), "MPI_Comm_idup");
  MPI_Status status;
  int done = 0;
  check_mpi(MPI_Test(&op.request, &done, &status), "MPI_Comm_idup");
  if (!done) wait_watched(*this, op, status);
  check_mpi(MPI_Comm_set_errhandler(roll_comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  state_->roll_comm = roll_comm;
  state_->roll_comm_owned = true;
}

std::string Watchdog::activity() const { return state_->activity(); }

bool Watchdog::fired() const { return state_->fired; }

WatchScope::WatchScope(const Communicator& comm, std::string activity, WaitPhase phase)
    : watchdog_(comm.watchdog()), uncaught_(std::uncaught_exceptions()) {
  if (!watchdog_) return;
  watchdog_->state_->activities.push_back(
      {.text = std::move(activity), .phase = phase, .start = WatchClock::now()});
}

WatchScope::~WatchScope() {
  if (!watchdog_) return;
  Watchdog::State& state = *watchdog_->state_;
  const Activity done = std::move(state.activities.back());
  state.activities.pop_back();
  const double elapsed = seconds_between(done.start, WatchClock::now());
  if (done.phase == WaitPhase::kStep) {
    state.base_activity = "after " + done.text;
    if (std::uncaught_exceptions() == uncaught_) {
      state.policy.record_step(elapsed - done.nested_long_s);
    }
  } else {
    if (std::uncaught_exceptions() == uncaught_) state.policy.record_long(done.text, elapsed);
    if (!state.activities.empty()) state.activities.back().nested_long_s += elapsed;
  }
}

std::string describe_rank(const Watchdog::State& state, int world_rank) {
  return fmt::format("rank {}{}", world_rank, rank_details(state, world_rank));
}

std::string describe_wait(const Watchdog::State& state, const PendingOp& op) {
  if (op.peer >= 0) {
    const std::string what =
        op.label.empty() ? fmt::format("a message (tag {})", op.tag) : op.label;
    const std::string peer = describe_rank(state, peer_world_rank(op));
    return op.expected_count >= 0 ? fmt::format("{} from {}", what, peer)
                                  : fmt::format("the send of {} to {}", what, peer);
  }
  std::string text = collective_kind(op) + " over " + (op.group ? op.group->name : "a group");
  if (op.group) text += fmt::format(" ({} ranks)", op.group->world_ranks.size());
  return text;
}

void wait_watched(Watchdog& watchdog, PendingOp& op, MPI_Status& status) {
  Watchdog::State& state = WatchdogInternals::state(watchdog);
  const WaitPhase phase = state.phase();
  const double timeout_s =
      state.policy.timeout(phase, state.activities.empty() ? "" : state.activities.back().text);
  const WaitingOn waiting(state, op);
  auto start = state.wait_start;
  auto last_poll = start;
  double suspended_s = 0.0;
  std::optional<WatchClock::time_point> stop_seen;
  auto pause = std::chrono::duration_cast<WatchClock::duration>(kFirstPause);
  while (true) {
    int done = 0;
    check_mpi(MPI_Test(&op.request, &done, &status), op.call);
    if (done) {
      state.last_wait_end = WatchClock::now();
      return;
    }
    const auto now = WatchClock::now();
    if (seconds_between(last_poll, now) >= kSuspendedSeconds) {
      start += now - last_poll;
      suspended_s += seconds_between(last_poll, now);
    }
    last_poll = now;
    const double waited_s = seconds_between(start, now);
    // Roll calls before the deadline: one that arrived while this rank slept comes from a rank
    // whose wait expired first, which then reports for both (leaves_the_report).
    if (waited_s >= state.spin_s) answer_roll_calls(watchdog);
    if (waited_s >= timeout_s) {
      expire(watchdog, op, {waited_s, suspended_s, timeout_s, false, std::nullopt});
    }
    if (waited_s < state.spin_s) {
      std::this_thread::yield();
      continue;
    }
    if (state.stop_requested && state.stop_requested->load()) {
      const std::optional<double> grace_s = state.policy.stop_grace(phase);
      if (!stop_seen) stop_seen = now;
      const double held_s = seconds_between(*stop_seen, now);
      if (grace_s && held_s >= *grace_s) {
        expire(watchdog, op, {waited_s, suspended_s, timeout_s, true, std::nullopt});
      }
      // Once per process, from rank 0 (the others' at debug level), and only for a wait that
      // holds the stop up: most waits of a step complete before the step boundary sees the stop.
      if (!grace_s && !state.stop_warned && held_s >= kStopWarningSeconds) {
        state.stop_warned = true;
        const auto level = state.rank == 0 ? spdlog::level::warn : spdlog::level::debug;
        if (state.stop_signal && state.stop_signal->load() == SIGTERM) {
          // mpirun sends SIGTERM only to end the job (after a rank's exit or MPI_Abort, or its
          // own SIGTERM), and SIGKILL after it; so does Slurm.
          spdlog::log(level,
                      "watchdog: {}: SIGTERM while waiting {:.1f} s for {}; the job is ending "
                      "(SIGKILL follows)",
                      state.activity(), waited_s, describe_wait(state, op));
        } else {
          spdlog::log(level,
                      "watchdog: {}: stop requested while waiting {:.1f} s for {}; waiting up to "
                      "{:.0f} s more",
                      state.activity(), waited_s, describe_wait(state, op), timeout_s - waited_s);
        }
      }
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<WatchClock::duration>(2 * pause, kLongestPause);
  }
}

}  // namespace mpipe::comm
