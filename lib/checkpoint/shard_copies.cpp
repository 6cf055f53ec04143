// Peer copies of checkpoint shards: the peer rule, the committing ranks and the resume's gather
// plan (see shard_copies.h).
#include "checkpoint/shard_copies.h"

#include <algorithm>
#include <map>

namespace mpipe::checkpoint {

std::optional<int> peer_rank(const std::vector<std::string>& hosts, int rank) {
  const int size = static_cast<int>(hosts.size());
  const std::string& own = hosts.at(static_cast<size_t>(rank));
  for (int step = 1; step < size; ++step) {
    const int other = (rank + step) % size;
    if (hosts[static_cast<size_t>(other)] != own) return other;
  }
  return std::nullopt;
}

std::vector<FileTransfer> plan_shard_copies(const std::vector<std::string>& hosts,
                                            const std::vector<WrittenShard>& written) {
  std::vector<FileTransfer> copies;
  for (const WrittenShard& shard : written) {
    if (auto peer = peer_rank(hosts, shard.rank)) {
      copies.push_back({.file = shard.stage, .from = shard.rank, .to = *peer});
    }
  }
  return copies;
}

std::vector<int> committing_ranks(const std::vector<std::string>& hosts,
                                  const std::vector<int>& holders) {
  std::map<std::string, int> lowest;
  for (int rank : holders) {
    const std::string& host = hosts.at(static_cast<size_t>(rank));
    const auto [it, inserted] = lowest.emplace(host, rank);
    if (!inserted) it->second = std::min(it->second, rank);
  }
  std::vector<int> ranks;
  for (const auto& [host, rank] : lowest) ranks.push_back(rank);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

GatherPlan plan_gather(const std::vector<std::vector<int>>& held, int num_files) {
  GatherPlan plan;
  for (int file = 0; file < num_files; ++file) {
    std::vector<bool> holds(held.size(), false);
    for (size_t rank = 0; rank < held.size(); ++rank) {
      holds[rank] = std::find(held[rank].begin(), held[rank].end(), file) != held[rank].end();
    }
    const auto source = std::find(holds.begin(), holds.end(), true);
    if (source == holds.end()) {
      plan.unheld.push_back(file);
      continue;
    }
    const int from = static_cast<int>(source - holds.begin());
    for (size_t rank = 0; rank < held.size(); ++rank) {
      if (!holds[rank])
        plan.transfers.push_back({.file = file, .from = from, .to = static_cast<int>(rank)});
    }
  }
  return plan;
}

}  // namespace mpipe::checkpoint
