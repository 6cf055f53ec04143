// Partitioner: the contiguous split of L layers into stages that minimizes the slowest stage
// (dynamic programming over stage boundaries), or with virtual stages the slowest rank (a search
// over the boundaries), with every stage and rank within a memory limit.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "plan/partition.h"

namespace mpipe::plan {

// A cost of layers [begin, end) placed as stage `stage` (time, or peak bytes: the memory of a
// stage may depend on its position, e.g. 1F1B keeps K - stage micro-batches in flight).
using StageCost = std::function<double(int begin, int end, int stage)>;
// A cost of a whole partition on one rank (its peak bytes, over all the stages it holds).
using RankCost = std::function<double(const std::vector<LayerRange>& ranges, int rank)>;

struct PartitionProblem {
  int num_layers = 0;
  int num_stages = 0;
  StageCost time;                      // minimized: the largest over the stages (or ranks)
  StageCost memory;                    // must be <= memory_limit on every stage (when set)
  std::optional<double> memory_limit;  // none: memory is not constrained
  // With virtual stages, the rank that runs each stage (num_stages entries): the time minimized
  // is then the largest over the ranks of the sum of their stages' times, and with a limit each
  // rank's `rank_memory` must also be within it. Empty: each stage is a rank of its own.
  std::vector<int> rank_of_stage;
  RankCost rank_memory;  // with rank_of_stage and a limit
};

// The partition that minimizes the largest stage (or rank) time among those whose every stage
// (and rank) fits the memory limit; nullopt when none fits. Among equally good partitions, the
// one found first (deterministic: every rank computes the same one). Needs 1 <= num_stages <=
// num_layers. Per stage, O(K L^2) cost evaluations. Per rank, a depth-first search over the stage
// boundaries that abandons a branch once a rank's time reaches the best partition's so far
// (starting from the per-stage one's): exact unless it visits kRankSearchNodes partial
// partitions, after which it returns the best found, never slower than the per-stage partition
// where that fits.
std::optional<std::vector<LayerRange>> best_partition(const PartitionProblem& problem);

// Up to `max_count` partitions as good as `best` (best_partition's answer for `problem`): `best`
// first, then the others whose largest stage (or rank) time equals its within rounding, in
// search order, each within the memory limit. Where several blocks cost the same, many
// partitions tie, and their pipelines differ: the planner simulates them and keeps the fastest.
// The search visits at most kTieSearchNodes partial partitions.
std::vector<std::vector<LayerRange>> tied_partitions(const PartitionProblem& problem,
                                                     const std::vector<LayerRange>& best,
                                                     int max_count);

// The partial partitions the per-rank search visits at most (a few seconds on a loaded core).
inline constexpr int64_t kRankSearchNodes = 2'000'000;
// The partial partitions tied_partitions visits at most (a tenth of a second: it runs at every
// plan with chunks, where 129 layers in 16 stages have more ties than it lists).
inline constexpr int64_t kTieSearchNodes = 100'000;

// The largest of `cost` over the stages of `ranges` (stage s = ranges[s]).
double largest_stage_cost(const std::vector<LayerRange>& ranges, const StageCost& cost);

// The largest over the ranks of the sum of `cost` over each rank's stages (rank_of_stage[s] runs
// stage s = ranges[s]; one entry per stage).
double largest_rank_cost(const std::vector<LayerRange>& ranges,
                         const std::vector<int>& rank_of_stage, const StageCost& cost);

}  // namespace mpipe::plan
