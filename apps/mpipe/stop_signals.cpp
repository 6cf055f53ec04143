// Stopping a run at its next step boundary on SIGTERM or SIGUSR1 (train and serve).
#include "stop_signals.h"

#include <csignal>

namespace mpipe::app {
namespace {

// Set by SIGTERM/SIGUSR1 (Slurm's warning before a time limit or preemption); the training
// loop checkpoints and stops at the next step boundary. A signal handler can only reach
// process-wide state, hence these globals.
std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_signal{0};  // the signal that set it, for the watchdog's warning

extern "C" void request_stop(int signal) {
  g_stop_signal.store(signal);
  g_stop_requested.store(true);
}

}  // namespace

const std::atomic<bool>* stop_on_signals() {
  std::signal(SIGTERM, request_stop);
  std::signal(SIGUSR1, request_stop);
  return &g_stop_requested;
}

const std::atomic<int>* stop_signal() { return &g_stop_signal; }

}  // namespace mpipe::app
