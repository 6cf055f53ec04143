// Probing hosts for mpipe supervise (see host_probes.h).
#include "host_probes.h"

#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include "child_process.h"

namespace mpipe::app {

HostProbes::HostProbes(const supervise::Launcher& launcher, std::vector<supervise::HostSlots> hosts,
                       double timeout_s)
    : hosts_(std::move(hosts)),
      deadline_(std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(timeout_s))) {
  for (const auto& host : hosts_) {
    probes_.push_back(spawn(supervise::probe_command(launcher, host.host), /*quiet=*/true));
    statuses_.emplace_back();
  }
}

HostProbes::~HostProbes() {
  try {
    kill_running();
  } catch (...) {  // (a destructor: waitpid's error is not reported)
  }
}

void HostProbes::kill_running() {
  for (size_t i = 0; i < probes_.size(); ++i) {
    if (statuses_[i]) continue;
    ::kill(probes_[i], SIGKILL);
    while (!statuses_[i]) statuses_[i] = ended(probes_[i]);
  }
}

std::optional<std::vector<supervise::HostSlots>> HostProbes::answering() {
  bool running = false;
  for (size_t i = 0; i < probes_.size(); ++i) {
    if (!statuses_[i]) statuses_[i] = ended(probes_[i]);
    running = running || !statuses_[i];
  }
  if (running) {
    if (std::chrono::steady_clock::now() <= deadline_) return std::nullopt;
    kill_running();
  }
  std::vector<supervise::HostSlots> alive;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (WIFEXITED(*statuses_[i]) && WEXITSTATUS(*statuses_[i]) == 0) alive.push_back(hosts_[i]);
  }
  return alive;
}

std::vector<supervise::HostSlots> HostProbes::wait(std::chrono::milliseconds poll) {
  while (true) {
    if (std::optional<std::vector<supervise::HostSlots>> alive = answering()) return *alive;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace mpipe::app
