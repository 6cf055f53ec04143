// Where each rank runs: its host and the CPUs it may run on, gathered at start-up and said in one
// line, so that a run's binding (or its absence) is on record beside its speed.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::comm {

struct RankPlacement {
  std::string host;   // MPI_Get_processor_name
  std::string cpus;   // the CPUs this rank may run on (sched_getaffinity): "0-3,8"
  int count = 0;      // how many
  int host_cpus = 0;  // its host's online CPUs: count == host_cpus is a rank not bound
};

// This process's.
RankPlacement own_placement();

// "0-3,8" for {0, 1, 2, 3, 8}; `cpus` ascending.
std::string cpu_list(const std::vector<int>& cpus);

// Collective over `world`: every rank's, by world rank (a host name cut to 255 characters, a CPU
// list to 119).
std::vector<RankPlacement> exchange_placements(const Communicator& world,
                                               const RankPlacement& mine);

// One line for the log: "placement: 8 ranks on 1 host (a), 2 OpenMP threads each, CPUs by rank:
// 0-1 | 2-3 | ..." or, when no rank is bound, "... not bound to CPUs (each may run on all 16 of
// its host's)"; with several hosts, each host's name before its first rank's CPUs.
std::string describe_placement(const std::vector<RankPlacement>& ranks, int threads_per_rank);

// The first rank given fewer CPUs than OpenMP threads ("rank 3 (host a) runs 2 OpenMP threads on
// 1 CPU (3): they share it"), or an empty string.
std::string oversubscribed_rank(const std::vector<RankPlacement>& ranks, int threads_per_rank);

}  // namespace mpipe::comm
