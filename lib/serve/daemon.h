// The daemon of `mpipe serve`: every rank runs the spool's experiments one after another, each
// planned for the world it gets, until a signal or an idle timeout ends it.
#pragma once

#include <atomic>
#include <cstdio>
#include <optional>
#include <string>

#include "comm/communicator.h"

namespace mpipe::serve {

struct ServeOptions {
  std::string spool_dir;
  std::optional<double> idle_exit_s;  // stop after this long with nothing to run
  double poll_s = 0.5;                // how often an idle daemon looks at the queue
  // Set by SIGTERM/SIGUSR1: the running experiment stops with a checkpoint, the daemon ends.
  const std::atomic<bool>* stop_signal = nullptr;
  std::optional<double> kill_grace_s;  // train::RunOptions::kill_grace_s, for each experiment
  std::FILE* progress = nullptr;       // rank 0's progress lines (stdout from main); null = none
  bool progress_in_place = false;
  // Set by mpipe supervise, which relaunches the daemon after a lost peer on the hosts that answer
  // (serve --resume-lost-peer): an experiment that loses a peer is resumed however often it was
  // before, not once (the supervisor's --max-restarts bounds the relaunches).
  bool resume_lost_peer = false;
};

// Why serve() returned.
enum class StopReason { kSignal, kIdle };

// Collective over `world`. Rank 0 holds the spool's lock, takes experiments from its queue (the
// one a stopped daemon left active first), writes status.json and broadcasts each experiment;
// every rank then runs it like `mpipe train --resume-or-start` into runs/<name>/. An experiment
// that fails (bad input, a non-finite loss) is recorded as failed and the daemon goes on. One
// that ends the whole job from one rank (MemoryLimitExceeded, WatchdogTimeout: rethrown for main
// to abort the job) leaves that rank's FailureNote (and, on rank 0, the failure in status.json);
// the next daemon on the spool records it as failed and goes on with the queue (a first lost
// peer, or any with resume_lost_peer: interrupted, and resumed from its checkpoint).
// Throws AgreedError on every rank when the spool cannot be served (another daemon holds it:
// "DIR: in use by mpipe serve pid 12 on host h since T (lock DIR/.lock)"; a folder that cannot
// be written).
StopReason serve(const ServeOptions& options, const comm::Communicator& world);

}  // namespace mpipe::serve
