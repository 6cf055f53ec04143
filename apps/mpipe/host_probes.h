// Probing hosts for mpipe supervise: each host runs `true` under the launcher (its probe_command),
// all at once, within a timeout; polled, so the supervisor can watch a running job meanwhile.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <vector>

#include "supervise/host_list.h"
#include "supervise/launcher.h"

namespace mpipe::app {

class HostProbes {
 public:
  // Starts the probes of `hosts`; each has `timeout_s` seconds.
  HostProbes(const supervise::Launcher& launcher, std::vector<supervise::HostSlots> hosts,
             double timeout_s);
  // Kills and reaps the probes still running.
  ~HostProbes();
  HostProbes(const HostProbes&) = delete;
  HostProbes& operator=(const HostProbes&) = delete;

  // Once every probe has ended or the timeout has passed (the rest are then killed): the hosts
  // whose probe exited 0, in the order given. nullopt while some still run.
  std::optional<std::vector<supervise::HostSlots>> answering();

  // Waits for answering() (polling every `poll`).
  std::vector<supervise::HostSlots> wait(std::chrono::milliseconds poll);

 private:
  void kill_running();

  std::vector<supervise::HostSlots> hosts_;
  std::vector<pid_t> probes_;
  std::vector<std::optional<int>> statuses_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace mpipe::app
