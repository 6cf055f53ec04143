// Partitioner: the contiguous split of L layers into K stages that minimizes the slowest stage,
// exactly (dynamic programming over stage boundaries), with every stage within a memory limit.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "plan/partition.h"

namespace mpipe::plan {

// A cost of layers [begin, end) placed as stage `stage` (time, or peak bytes: the memory of a
// stage may depend on its position, e.g. 1F1B keeps K - stage micro-batches in flight).
using StageCost = std::function<double(int begin, int end, int stage)>;

struct PartitionProblem {
  int num_layers = 0;
  int num_stages = 0;
  StageCost time;                      // minimized: the largest over the stages
  StageCost memory;                    // must be <= memory_limit on every stage (when set)
  std::optional<double> memory_limit;  // none: memory is not constrained
};

// The partition that minimizes the largest stage time among those whose every stage fits the
// memory limit; nullopt when none fits. Among equally good partitions, the one found first
// (deterministic: every rank computes the same one). Needs 1 <= num_stages <= num_layers.
// O(K L^2) cost evaluations.
std::optional<std::vector<LayerRange>> best_partition(const PartitionProblem& problem);

// The largest of `cost` over the stages of `ranges` (stage s = ranges[s]).
double largest_stage_cost(const std::vector<LayerRange>& ranges, const StageCost& cost);

}  // namespace mpipe::plan
