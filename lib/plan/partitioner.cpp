// Exact min-max partition by dynamic programming over (stages used, layers covered).
#include "plan/partitioner.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace mpipe::plan {

std::optional<std::vector<LayerRange>> best_partition(const PartitionProblem& problem) {
  const int num_layers = problem.num_layers, num_stages = problem.num_stages;
  check(1 <= num_stages && num_stages <= num_layers, "best_partition: {} stages for {} layers",
        num_stages, num_layers);
  check(static_cast<bool>(problem.time), "best_partition: no time cost");
  check(!problem.memory_limit || static_cast<bool>(problem.memory),
        "best_partition: a memory limit without a memory cost");
  constexpr double kNone = std::numeric_limits<double>::infinity();
  const auto fits = [&](int begin, int end, int stage) {
    return !problem.memory_limit || problem.memory(begin, end, stage) <= *problem.memory_limit;
  };
  const auto layers = static_cast<size_t>(num_layers);
  // best[s][j]: the smallest largest-stage time of stages 0..s covering layers [0, j);
  // start[s][j]: where stage s begins in that partition.
  std::vector<std::vector<double>> best(static_cast<size_t>(num_stages),
                                        std::vector<double>(layers + 1, kNone));
  std::vector<std::vector<int>> start(static_cast<size_t>(num_stages),
                                      std::vector<int>(layers + 1, -1));
  for (int s = 0; s < num_stages; ++s) {
    // Stage s ends at j: it leaves at least one layer for each later stage.
    for (int end = s + 1; end <= num_layers - (num_stages - 1 - s); ++end) {
      double& cell = best[static_cast<size_t>(s)][static_cast<size_t>(end)];
      int& from = start[static_cast<size_t>(s)][static_cast<size_t>(end)];
      for (int begin = s; begin < end; ++begin) {
        const double before = s == 0 ? (begin == 0 ? 0.0 : kNone)
                                     : best[static_cast<size_t>(s - 1)][static_cast<size_t>(begin)];
        if (before == kNone || before >= cell || !fits(begin, end, s)) continue;
        const double candidate = std::max(before, problem.time(begin, end, s));
        if (candidate < cell) {
          cell = candidate;
          from = begin;
        }
      }
    }
  }
  if (start[static_cast<size_t>(num_stages - 1)][layers] < 0) return std::nullopt;
  std::vector<LayerRange> ranges(static_cast<size_t>(num_stages));
  int end = num_layers;
  for (int s = num_stages - 1; s >= 0; --s) {
    const int begin = start[static_cast<size_t>(s)][static_cast<size_t>(end)];
    ranges[static_cast<size_t>(s)] = {begin, end};
    end = begin;
  }
  return ranges;
}

double largest_stage_cost(const std::vector<LayerRange>& ranges, const StageCost& cost) {
  double largest = -std::numeric_limits<double>::infinity();
  for (size_t s = 0; s < ranges.size(); ++s) {
    largest = std::max(largest, cost(ranges[s].begin, ranges[s].end, static_cast<int>(s)));
  }
  return largest;
}

}  // namespace mpipe::plan
