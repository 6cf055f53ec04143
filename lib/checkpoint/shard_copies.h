// Peer copies of checkpoint shards, as plans over world ranks and their hosts (pure, no MPI): who
// keeps a copy of whose shard, which ranks commit, and which files a resume moves from rank to
// rank so that every rank holds every file of the step.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mpipe::checkpoint {

// The rank that keeps a copy of rank `rank`'s shards: the next rank in world order, wrapping
// around, whose host differs from its own; nullopt when every rank runs on its host. `hosts` holds
// the host of every world rank.
std::optional<int> peer_rank(const std::vector<std::string>& hosts, int rank);

// One file sent from rank `from` to rank `to` (a shard's stage, or another numbered file).
struct FileTransfer {
  int file = 0;
  int from = 0;
  int to = 0;
  bool operator==(const FileTransfer&) const = default;
};

// A shard written by world rank `rank`.
struct WrittenShard {
  int rank = 0;
  int stage = 0;
};

// The copies of a checkpoint: each written shard (file = its stage) sent by its writer to the
// writer's peer_rank, in the order of `written`; none when all ranks share a host.
std::vector<FileTransfer> plan_shard_copies(const std::vector<std::string>& hosts,
                                            const std::vector<WrittenShard>& written);

// The ranks that write a checkpoint's commit (meta.json): on every host where a rank in `holders`
// (the ranks that hold a shard or a copy) runs, the lowest such rank; ascending.
std::vector<int> committing_ranks(const std::vector<std::string>& hosts,
                                  const std::vector<int>& holders);

// What a resume moves: for each file 0..num_files-1, from the lowest rank that holds it to every
// rank that does not (file by file, receivers ascending), and the files no rank holds.
struct GatherPlan {
  std::vector<FileTransfer> transfers;
  std::vector<int> unheld;
};

// `held[r]`: the files world rank r holds (any order; numbers outside 0..num_files-1 are ignored).
GatherPlan plan_gather(const std::vector<std::vector<int>>& held, int num_files);

}  // namespace mpipe::checkpoint
