// Watchdog: a deadline for every wait on a peer. On expiry the rank says in one line what it waited
// for (activity, peer rank and host, micro-batch, seconds) and which ranks do not answer a roll
// call.
#pragma once

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/comm_config.h"
#include "comm/deadline_policy.h"
#include "comm/topology.h"

namespace mpipe::comm {

class Communicator;

// The exit code of a job the watchdog ended (a peer is lost, or hung while a stop was requested).
inline constexpr int kWatchdogExitCode = 3;

// A wait passed its deadline: a peer is lost. The message is one line, ready to log:
// "watchdog: step 12: waited 30.0 s for the gradient of micro-batch 3 from rank 1 (pipeline rank 1,
// host node7), which does not answer; ending the job". Deliberately not an mpipe::Error: no
// agreement can be reached with a lost peer, so comm::agree lets it pass, and main logs it and ends
// the job with MPI_Abort(kWatchdogExitCode). Nothing else may swallow it (the daemon records it,
// then rethrows).
class WatchdogTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One per process, set on the world communicator (Communicator::set_watchdog), from which every
// split communicator inherits it. Every wait of those communicators then has a deadline from its
// DeadlinePolicy: one MPI_Test, then polling (which also drives MPI's progress: this Open MPI has
// no progress thread) that spins for 50 ms and then sleeps with a back-off up to 1 ms, so a message
// that arrives on time costs what MPI_Wait costs and a hung wait costs almost no CPU. A stop flag
// (SIGTERM/SIGUSR1) that is set while a step's wait hangs ends the job after the stop grace.
class Watchdog {
 public:
  // For this rank of `world` (not collective). It must outlive every communicator it is set on.
  explicit Watchdog(const Communicator& world, const CommConfig& config = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // New settings for a new run: forgets the measured steps.
  void configure(const CommConfig& config);
  const DeadlinePolicy& policy() const;
  // The flag a SIGTERM/SIGUSR1 handler sets (null: none).
  void set_stop_flag(const std::atomic<bool>* stop_requested);
  // The number of the signal that set it (0: none; null: not known), for the warning that a stop
  // waits for a wait: after SIGTERM (mpirun ending the job, Slurm) a SIGKILL follows, so the job
  // ends before that wait's deadline.
  void set_stop_signal(const std::atomic<int>* stop_signal);
  // The host of every world rank and the rank layout, for messages.
  void set_hosts(std::vector<std::string> hosts);
  // How long a wait polls without sleeping before it sleeps between polls (50 ms unless set). A
  // rank whose host runs more threads than it has CPUs would spin at the expense of the ranks
  // computing: start-up sets 0 there (app::start_up).
  void set_spin_seconds(double seconds);
  void set_topology(const Topology& topology);
  // "rank 1 (pipeline rank 1, host node7)"; "rank 1 (host node7)" before the layout is known.
  std::string describe_rank(int world_rank) const;
  // Collective over `world`: a communicator of the watchdog's own, on which a rank whose wait
  // expired asks every rank what it is waiting for; ranks that do not answer are named. Until then
  // (start-up's first collectives) roll calls use the point-to-point messages of the constructor's
  // `world`, which must carry no other point-to-point message before.
  void enable_roll_call(const Communicator& world);
  // What the rank is doing: "step 12", "step 10: checkpoint", "start-up", "after step 100:
  // evaluation" (the scopes in progress, outermost first; after the last step scope outside one).
  std::string activity() const;
  // True once a wait expired: the job is ending, pending requests are abandoned, not waited for.
  bool fired() const;

  struct State;  // internal to lib/comm

 private:
  friend class WatchScope;
  friend struct WatchdogInternals;
  std::unique_ptr<State> state_;
};

// While it lives, the waits of `comm`'s watchdog belong to `activity` ("step 12", "checkpoint";
// nested scopes are shown outermost first: "step 10: checkpoint") and have the
// deadline of `phase`. A step scope that ends normally records the step's time (less the time of
// long scopes nested in it) for the automatic timeout. Does nothing without a watchdog.
class WatchScope {
 public:
  WatchScope(const Communicator& comm, std::string activity, WaitPhase phase);
  ~WatchScope();
  WatchScope(const WatchScope&) = delete;
  WatchScope& operator=(const WatchScope&) = delete;

 private:
  Watchdog* watchdog_;
  int uncaught_;  // exceptions in flight at construction: more at destruction = unwinding
};

}  // namespace mpipe::comm
