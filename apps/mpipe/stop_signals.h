// Stopping a run at its next step boundary on SIGTERM or SIGUSR1 (train and serve).
#pragma once

#include <atomic>

namespace mpipe::app {

// Installs SIGTERM and SIGUSR1 handlers that set the flag it returns.
const std::atomic<bool>* stop_on_signals();

// The signal that set stop_on_signals' flag (0 before one), for the watchdog's warning.
const std::atomic<int>* stop_signal();

}  // namespace mpipe::app
