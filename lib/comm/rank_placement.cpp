// Each rank's CPUs, from sched_getaffinity, exchanged in fixed-size records and described.
#include "comm/rank_placement.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>

#include "comm/mpi_handles.h"
#include "core/error.h"

namespace mpipe::comm {
namespace {

// A record: the host and the CPU list, each NUL-padded, then two 32-bit counts.
constexpr size_t kHostBytes = 256;
constexpr size_t kListBytes = 120;

std::string plural(int n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

std::string cpu_list(const std::vector<int>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return text;
}

RankPlacement own_placement() {
  std::array<char, MPI_MAX_PROCESSOR_NAME> host{};
  int length = 0;
  check_mpi(MPI_Get_processor_name(host.data(), &length), "MPI_Get_processor_name");
  cpu_set_t set;
  CPU_ZERO(&set);
  check(sched_getaffinity(0, sizeof(set), &set) == 0, "sched_getaffinity failed: {}",
        std::strerror(errno));
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return {.host = std::string(host.data(), static_cast<size_t>(length)),
          .cpus = cpu_list(cpus),
          .count = static_cast<int>(cpus.size()),
          .host_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))};
}

std::vector<RankPlacement> exchange_placements(const Communicator& world,
                                               const RankPlacement& mine) {
  std::vector<char> record(kHostBytes + kListBytes + 2 * sizeof(int32_t), '\0');
  std::string list = mine.cpus;
  if (list.size() >= kListBytes) list = list.substr(0, kListBytes - 4) + "...";
  std::copy_n(mine.host.begin(), std::min(mine.host.size(), kHostBytes - 1), record.begin());
  std::copy(list.begin(), list.end(), record.begin() + kHostBytes);
  const std::array<int32_t, 2> counts = {mine.count, mine.host_cpus};
  std::memcpy(record.data() + kHostBytes + kListBytes, counts.data(), sizeof(counts));
  const std::vector<char> all = world.allgather(record);
  std::vector<RankPlacement> ranks;
  for (size_t offset = 0; offset < all.size(); offset += record.size()) {
    std::array<int32_t, 2> theirs{};
    std::memcpy(theirs.data(), all.data() + offset + kHostBytes + kListBytes, sizeof(theirs));
    ranks.push_back({.host = std::string(all.data() + offset),
                     .cpus = std::string(all.data() + offset + kHostBytes),
                     .count = theirs[0],
                     .host_cpus = theirs[1]});
  }
  return ranks;
}

std::string describe_placement(const std::vector<RankPlacement>& ranks, int threads_per_rank) {
  std::set<std::string> distinct;
  for (const RankPlacement& rank : ranks) distinct.insert(rank.host);
  std::string line = fmt::format(
      "placement: {} on {}{}, {} each", plural(static_cast<int>(ranks.size()), "rank", "ranks"),
      plural(static_cast<int>(distinct.size()), "host", "hosts"),
      distinct.size() == 1 ? fmt::format(" ({})", *distinct.begin()) : "",
      plural(threads_per_rank, "OpenMP thread", "OpenMP threads"));
  const bool none_bound = std::all_of(
      ranks.begin(), ranks.end(), [](const RankPlacement& r) { return r.count == r.host_cpus; });
  if (none_bound) {
    const bool same_size = std::all_of(ranks.begin(), ranks.end(), [&](const RankPlacement& r) {
      return r.host_cpus == ranks.front().host_cpus;
    });
    return line + (same_size ? fmt::format(", not bound to CPUs (each may run on all {} of its "
                                           "host's)",
                                           ranks.front().host_cpus)
                             : ", not bound to CPUs (each may run on all of its host's)");
  }
  line += ", CPUs by rank:";
  for (size_t r = 0; r < ranks.size(); ++r) {
    const bool new_host = distinct.size() > 1 && (r == 0 || ranks[r].host != ranks[r - 1].host);
    line += fmt::format("{}{} {}", r == 0 ? "" : " |", new_host ? " " + ranks[r].host + ":" : "",
                        ranks[r].cpus);
  }
  return line;
}

std::string oversubscribed_rank(const std::vector<RankPlacement>& ranks, int threads_per_rank) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].count < threads_per_rank) {
      return fmt::format("rank {} (host {}) runs {} on {} ({}): they share {}", r, ranks[r].host,
                         plural(threads_per_rank, "OpenMP thread", "OpenMP threads"),
                         plural(ranks[r].count, "CPU", "CPUs"), ranks[r].cpus,
                         ranks[r].count == 1 ? "it" : "them");
    }
  }
  return {};
}

}  // namespace mpipe::comm
