// Min-max partition: per stage by dynamic programming over (stages used, layers covered), per
// rank by a bounded depth-first search over the stage boundaries, which also lists the ties.
#include "plan/partitioner.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace mpipe::plan {
namespace {

// The per-rank search: stages are laid out in order, each rank's time summed as its stages are
// placed. Searching for the best, a branch ends once one rank is as slow as the best complete
// partition so far; listing ties, once one rank is slower than the optimum (within rounding).
class RankSearch {
 public:
  // With an empty `rank_of_stage`, each stage is a rank of its own (the per-stage objective).
  RankSearch(const PartitionProblem& problem, std::vector<int> rank_of_stage)
      : p_(problem),
        per_stage_(rank_of_stage.empty()),
        rank_of_stage_(per_stage_ ? every_stage_alone(problem.num_stages)
                                  : std::move(rank_of_stage)),
        num_ranks_(*std::ranges::max_element(rank_of_stage_) + 1),
        ranges_(static_cast<size_t>(problem.num_stages)),
        rank_time_(static_cast<size_t>(num_ranks_), 0.0) {}

  // Starts from `start` (when it fits every rank) and returns the best partition that fits.
  std::optional<std::vector<LayerRange>> best(const std::optional<std::vector<LayerRange>>& start) {
    if (start && fits_ranks(*start)) {
      best_ = start;
      best_time_ = largest_rank_cost(*start, rank_of_stage_, p_.time);
    }
    place(0, 0);
    return best_;
  }

  // Up to `max_count` partitions that fit, each with its slowest rank within rounding of
  // `optimum`, in search order.
  std::vector<std::vector<LayerRange>> ties(double optimum, int max_count) {
    listing_ = true;
    best_time_ = optimum * (1 + kTieRounding);
    max_ties_ = max_count;
    place(0, 0);
    return std::move(ties_);
  }

 private:
  static std::vector<int> every_stage_alone(int num_stages) {
    std::vector<int> ranks(static_cast<size_t>(num_stages));
    std::iota(ranks.begin(), ranks.end(), 0);
    return ranks;
  }
  bool fits_stage(int begin, int end, int stage) const {
    return !p_.memory_limit || p_.memory(begin, end, stage) <= *p_.memory_limit;
  }
  bool fits_ranks(const std::vector<LayerRange>& ranges) const {
    if (!p_.memory_limit || per_stage_) return true;  // (per stage: fits_stage checked each)
    for (int rank = 0; rank < num_ranks_; ++rank) {
      if (p_.rank_memory(ranges, rank) > *p_.memory_limit) return false;
    }
    return true;
  }
  // Whether a rank that has reached `time` can still be part of what the search looks for.
  bool within_bound(double time) const { return listing_ ? time <= best_time_ : time < best_time_; }
  // Places stage `stage` from layer `begin` on, then the stages after it.
  void place(int stage, int begin) {
    if (++nodes_ > (listing_ ? kTieSearchNodes : kRankSearchNodes)) return;
    const int last_end =
        stage == p_.num_stages - 1 ? p_.num_layers : p_.num_layers - (p_.num_stages - 1 - stage);
    const int first_end = stage == p_.num_stages - 1 ? p_.num_layers : begin + 1;
    double& rank_time = rank_time_[static_cast<size_t>(rank_of_stage_[static_cast<size_t>(stage)])];
    for (int end = first_end; end <= last_end; ++end) {
      if (listing_ && std::ssize(ties_) >= max_ties_) return;
      if (!fits_stage(begin, end, stage)) continue;
      const double before = rank_time;
      rank_time += p_.time(begin, end, stage);
      ranges_[static_cast<size_t>(stage)] = {begin, end};
      if (within_bound(rank_time)) {
        if (stage + 1 < p_.num_stages) {
          place(stage + 1, end);
        } else if (fits_ranks(ranges_)) {
          if (listing_) {
            ties_.push_back(ranges_);
          } else {
            best_ = ranges_;
            best_time_ = *std::ranges::max_element(rank_time_);
          }
        }
      }
      rank_time = before;
    }
  }

  // Sums of the same stage times in another order differ in their last bits.
  static constexpr double kTieRounding = 1e-9;

  const PartitionProblem& p_;
  bool per_stage_;
  std::vector<int> rank_of_stage_;
  int num_ranks_;
  std::vector<LayerRange> ranges_;  // the partition being built
  std::vector<double> rank_time_;   // per rank: the time of its stages placed so far
  std::optional<std::vector<LayerRange>> best_;
  double best_time_ = std::numeric_limits<double>::infinity();
  bool listing_ = false;  // ties(), not best()
  int max_ties_ = 0;
  std::vector<std::vector<LayerRange>> ties_;
  int64_t nodes_ = 0;
};

// The per-stage optimum (see best_partition).
std::optional<std::vector<LayerRange>> best_stage_partition(const PartitionProblem& problem) {
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

}  // namespace

std::optional<std::vector<LayerRange>> best_partition(const PartitionProblem& problem) {
  if (problem.rank_of_stage.empty()) return best_stage_partition(problem);
  check(std::ssize(problem.rank_of_stage) == problem.num_stages,
        "best_partition: {} ranks of stages for {} stages", problem.rank_of_stage.size(),
        problem.num_stages);
  check(!problem.memory_limit || static_cast<bool>(problem.rank_memory),
        "best_partition: a memory limit without a rank memory cost");
  return RankSearch(problem, problem.rank_of_stage).best(best_stage_partition(problem));
}

std::vector<std::vector<LayerRange>> tied_partitions(const PartitionProblem& problem,
                                                     const std::vector<LayerRange>& best,
                                                     int max_count) {
  check(max_count >= 1, "tied_partitions: at most {} partitions", max_count);
  const double optimum = problem.rank_of_stage.empty()
                             ? largest_stage_cost(best, problem.time)
                             : largest_rank_cost(best, problem.rank_of_stage, problem.time);
  std::vector<std::vector<LayerRange>> out{best};
  for (std::vector<LayerRange>& ranges :
       RankSearch(problem, problem.rank_of_stage).ties(optimum, max_count)) {
    if (std::ssize(out) == max_count) break;
    if (ranges != best) out.push_back(std::move(ranges));
  }
  return out;
}

double largest_stage_cost(const std::vector<LayerRange>& ranges, const StageCost& cost) {
  double largest = -std::numeric_limits<double>::infinity();
  for (size_t s = 0; s < ranges.size(); ++s) {
    largest = std::max(largest, cost(ranges[s].begin, ranges[s].end, static_cast<int>(s)));
  }
  return largest;
}

double largest_rank_cost(const std::vector<LayerRange>& ranges,
                         const std::vector<int>& rank_of_stage, const StageCost& cost) {
  check(rank_of_stage.size() == ranges.size(),
        "largest_rank_cost: {} ranks of stages for {} stages", rank_of_stage.size(), ranges.size());
  std::vector<double> rank_cost;
  for (size_t s = 0; s < ranges.size(); ++s) {
    const auto rank = static_cast<size_t>(rank_of_stage[s]);
    if (rank >= rank_cost.size()) rank_cost.resize(rank + 1, 0.0);
    rank_cost[rank] += cost(ranges[s].begin, ranges[s].end, static_cast<int>(s));
  }
  return rank_cost.empty() ? -std::numeric_limits<double>::infinity()
                           : *std::ranges::max_element(rank_cost);
}

}  // namespace mpipe::plan
