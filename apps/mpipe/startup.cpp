// The start-up handshake (versions and hosts of every rank) and the end-of-job barrier.
#include "startup.h"

#include <omp.h>
#include <spdlog/spdlog.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "comm/handshake.h"
#include "comm/watchdog.h"
#include "core/error.h"
#include "core/test_stop.h"
#include "version.h"

namespace mpipe::app {

std::string running_version() {
  const char* test_version = std::getenv("MPIPE_TEST_VERSION");
  return test_version && *test_version ? test_version : build_version();
}

void start_up(const comm::Communicator& world) {
  arm_test_stop(world.rank());
  test_stop_at(TestMoment::kStartUp);
  const std::vector<comm::RankIdentity> ranks =
      comm::exchange_identities(world, comm::own_identity(running_version()));
  // Every rank holds the same table, so every rank finds the same mismatch: agreed by construction.
  if (auto mismatch = comm::identity_mismatch(ranks)) throw AgreedError(*mismatch, 2);
  if (comm::Watchdog* watchdog = world.watchdog()) {
    std::vector<std::string> hosts;
    for (const comm::RankIdentity& rank : ranks) hosts.push_back(rank.host);
    // More threads on this host than it has CPUs (mpirun --oversubscribe), or OMP_WAIT_POLICY=
    // PASSIVE (what a user sets for ranks that share cores, README): a wait sleeps between polls
    // from the start, leaving the CPU to the ranks that compute (measured on 2 cores, 4 ranks: 13%
    // less CPU time per run, the same wall time alone).
    const auto here = std::count(hosts.begin(), hosts.end(), hosts[world.rank()]);
    const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
    const bool passive = wait_policy != nullptr && strcasecmp(wait_policy, "passive") == 0;
    if (passive || here * omp_get_max_threads() > sysconf(_SC_NPROCESSORS_ONLN)) {
      watchdog->set_spin_seconds(0.0);
    }
    watchdog->set_hosts(std::move(hosts));
    watchdog->enable_roll_call(world);
  }
}

int leave(const comm::Communicator& world, int code) {
  try {
    world.barrier();
  } catch (const comm::WatchdogTimeout& e) {
    spdlog::error("{}", e.what());
    spdlog::default_logger()->flush();
    world.abort(comm::kWatchdogExitCode);
  }
  return code;
}

}  // namespace mpipe::app
