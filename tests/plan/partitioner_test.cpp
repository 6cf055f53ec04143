// Tests for the partitioner: equal to brute force over every contiguous partition on random
// costs, per stage and per rank (ZB-V's and the loop placement), with and without a memory
// limit, and its edge cases.
#include "plan/partitioner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "plan/placement.h"

namespace mpipe::plan {
namespace {

// Per-layer costs, summed over a stage; memory grows with how early the stage is (as under
// 1F1B, where stage s keeps K - s micro-batches) plus a per-stage constant.
struct RandomCosts {
  std::vector<double> time, bytes;
  int num_stages = 1;

  double stage_time(int begin, int end, int) const {
    double t = 0.0;
    for (int i = begin; i < end; ++i) t += time[static_cast<size_t>(i)];
    return t;
  }
  double stage_memory(int begin, int end, int stage) const {
    double m = 3.0 * (num_stages - stage);
    for (int i = begin; i < end; ++i) m += bytes[static_cast<size_t>(i)];
    return m;
  }
  PartitionProblem problem(std::optional<double> limit) const {
    return {.num_layers = static_cast<int>(time.size()),
            .num_stages = num_stages,
            .time = [this](int b, int e, int s) { return stage_time(b, e, s); },
            .memory = [this](int b, int e, int s) { return stage_memory(b, e, s); },
            .memory_limit = limit,
            .rank_of_stage = {},
            .rank_memory = {}};
  }
};

RandomCosts random_costs(std::mt19937& rng, int num_layers, int num_stages) {
  std::uniform_int_distribution<int> value(1, 20);  // small integers: many ties
  RandomCosts c;
  c.num_stages = num_stages;
  for (int i = 0; i < num_layers; ++i) {
    c.time.push_back(value(rng));
    c.bytes.push_back(value(rng));
  }
  return c;
}

// Calls `visit` with every partition of [0, num_layers) into num_stages non-empty ranges.
template <typename Visit>
void every_partition(int num_layers, int num_stages, std::vector<LayerRange>& prefix, int begin,
                     Visit visit) {
  const int stage = static_cast<int>(prefix.size());
  if (stage == num_stages - 1) {
    prefix.push_back({begin, num_layers});
    visit(prefix);
    prefix.pop_back();
    return;
  }
  for (int end = begin + 1; end <= num_layers - (num_stages - 1 - stage); ++end) {
    prefix.push_back({begin, end});
    every_partition(num_layers, num_stages, prefix, end, visit);
    prefix.pop_back();
  }
}

// The brute-force optimum: the smallest largest-stage time among partitions within the limit
// (infinity when none is).
double brute_force(const PartitionProblem& p) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<LayerRange> prefix;
  every_partition(p.num_layers, p.num_stages, prefix, 0, [&](const std::vector<LayerRange>& r) {
    if (p.memory_limit && largest_stage_cost(r, p.memory) > *p.memory_limit) return;
    best = std::min(best, largest_stage_cost(r, p.time));
  });
  return best;
}

// The ranges are contiguous, non-empty and cover [0, num_layers).
void expect_valid(const std::vector<LayerRange>& ranges, int num_layers, int num_stages) {
  ASSERT_EQ(static_cast<int>(ranges.size()), num_stages);
  int next = 0;
  for (const LayerRange& r : ranges) {
    EXPECT_EQ(r.begin, next);
    EXPECT_GT(r.end, r.begin);
    next = r.end;
  }
  EXPECT_EQ(next, num_layers);
}

TEST(Partitioner, EqualsBruteForceOnRandomCostsWithoutALimit) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int layers = 1 + static_cast<int>(rng() % 12);
    const int stages = 1 + static_cast<int>(rng() % std::min(4, layers));
    const RandomCosts costs = random_costs(rng, layers, stages);
    const PartitionProblem p = costs.problem(std::nullopt);
    const auto ranges = best_partition(p);
    ASSERT_TRUE(ranges.has_value()) << "trial " << trial;
    expect_valid(*ranges, layers, stages);
    EXPECT_EQ(largest_stage_cost(*ranges, p.time), brute_force(p)) << "trial " << trial;
  }
}

TEST(Partitioner, EqualsBruteForceOnRandomCostsUnderAStageDependentMemoryLimit) {
  std::mt19937 rng(11);
  int infeasible = 0, feasible = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int layers = 1 + static_cast<int>(rng() % 12);
    const int stages = 1 + static_cast<int>(rng() % std::min(4, layers));
    const RandomCosts costs = random_costs(rng, layers, stages);
    // Limits from tight to loose, so some problems have no solution at all.
    const double limit = 10.0 + static_cast<double>(rng() % 80);
    const PartitionProblem p = costs.problem(limit);
    const double expected = brute_force(p);
    const auto ranges = best_partition(p);
    if (expected == std::numeric_limits<double>::infinity()) {
      EXPECT_FALSE(ranges.has_value()) << "trial " << trial;
      ++infeasible;
      continue;
    }
    ++feasible;
    ASSERT_TRUE(ranges.has_value()) << "trial " << trial;
    expect_valid(*ranges, layers, stages);
    EXPECT_LE(largest_stage_cost(*ranges, p.memory), limit) << "trial " << trial;
    EXPECT_EQ(largest_stage_cost(*ranges, p.time), expected) << "trial " << trial;
  }
  EXPECT_GT(infeasible, 50);  // both outcomes are exercised
  EXPECT_GT(feasible, 50);
}

TEST(Partitioner, OneStageTakesEveryLayer) {
  std::mt19937 rng(3);
  const RandomCosts costs = random_costs(rng, 9, 1);
  EXPECT_EQ(*best_partition(costs.problem(std::nullopt)), (std::vector<LayerRange>{{0, 9}}));
}

TEST(Partitioner, AsManyStagesAsLayersGivesOneLayerEach) {
  std::mt19937 rng(5);
  const RandomCosts costs = random_costs(rng, 4, 4);
  EXPECT_EQ(*best_partition(costs.problem(std::nullopt)),
            (std::vector<LayerRange>{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
}

TEST(Partitioner, SplitsAroundTheHeavyLayers) {
  RandomCosts costs{
      .time = {1, 1, 8, 1, 1, 1, 1, 8}, .bytes = {1, 1, 1, 1, 1, 1, 1, 1}, .num_stages = 2};
  // [1 1 8 1] = 11 and [1 1 1 8] = 11 is the only split with both stages at 11.
  EXPECT_EQ(*best_partition(costs.problem(std::nullopt)),
            (std::vector<LayerRange>{{0, 4}, {4, 8}}));
}

TEST(Partitioner, AMemoryLimitMovesLayersOffTheStageThatKeepsMore) {
  // Equal times; stage 0 holds 3 more bytes than stage 1 (RandomCosts::stage_memory).
  RandomCosts costs{.time = {1, 1, 1, 1}, .bytes = {2, 2, 2, 2}, .num_stages = 2};
  EXPECT_EQ(*best_partition(costs.problem(std::nullopt)),
            (std::vector<LayerRange>{{0, 2}, {2, 4}}));
  // Stage 0 with two layers needs 6 + 4 = 10 > 9; with one layer 6 + 2 = 8, stage 1 then 3 + 6.
  EXPECT_EQ(*best_partition(costs.problem(9.0)), (std::vector<LayerRange>{{0, 1}, {1, 4}}));
}

TEST(Partitioner, ReturnsNothingWhenNoPartitionFitsTheLimit) {
  RandomCosts costs{.time = {1, 1, 1}, .bytes = {5, 5, 5}, .num_stages = 3};
  EXPECT_FALSE(best_partition(costs.problem(7.0)).has_value());  // stage 0 alone needs 9 + 5
  EXPECT_TRUE(best_partition(costs.problem(14.0)).has_value());
}

TEST(Partitioner, RejectsMoreStagesThanLayers) {
  RandomCosts costs{.time = {1, 1}, .bytes = {1, 1}, .num_stages = 3};
  EXPECT_THROW(best_partition(costs.problem(std::nullopt)), Error);
}

TEST(Partitioner, LargestStageCostIsTheMaximumOverStages) {
  RandomCosts costs{.time = {1, 2, 3, 4}, .bytes = {0, 0, 0, 0}, .num_stages = 2};
  const StageCost time = [&](int b, int e, int s) { return costs.stage_time(b, e, s); };
  EXPECT_EQ(largest_stage_cost({{0, 3}, {3, 4}}, time), 6.0);
  EXPECT_EQ(largest_stage_cost({{0, 1}, {1, 4}}, time), 9.0);
}

// Per rank: the stages of K ranks with two chunks each, placed as `kind` puts them.
std::vector<int> ranks_of_stages(int num_ranks, PlacementKind kind) {
  return Placement{.num_ranks = num_ranks, .virtual_stages = 2, .kind = kind}.ranks_of_stages();
}

// The problem per rank: `costs` per stage, each rank's memory the sum of its stages'.
PartitionProblem rank_problem(const RandomCosts& costs, std::vector<int> rank_of_stage,
                              std::optional<double> limit) {
  PartitionProblem p = costs.problem(limit);
  p.rank_memory = [&costs, rank_of_stage](const std::vector<LayerRange>& ranges, int rank) {
    double bytes = 0.0;
    for (size_t s = 0; s < ranges.size(); ++s) {
      if (rank_of_stage[s] != rank) continue;
      bytes += costs.stage_memory(ranges[s].begin, ranges[s].end, static_cast<int>(s));
    }
    return bytes;
  };
  p.rank_of_stage = std::move(rank_of_stage);
  return p;
}

bool ranks_fit(const PartitionProblem& p, const std::vector<LayerRange>& ranges) {
  const int num_ranks = *std::ranges::max_element(p.rank_of_stage) + 1;
  for (int rank = 0; rank < num_ranks; ++rank) {
    if (p.rank_memory(ranges, rank) > *p.memory_limit) return false;
  }
  return largest_stage_cost(ranges, p.memory) <= *p.memory_limit;
}

// The brute-force optimum per rank: the smallest slowest rank among partitions whose stages and
// ranks are within the limit (infinity when none is).
double brute_force_per_rank(const PartitionProblem& p) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<LayerRange> prefix;
  every_partition(p.num_layers, p.num_stages, prefix, 0, [&](const std::vector<LayerRange>& r) {
    if (p.memory_limit && !ranks_fit(p, r)) return;
    best = std::min(best, largest_rank_cost(r, p.rank_of_stage, p.time));
  });
  return best;
}

TEST(Partitioner, PerRankEqualsBruteForceOnRandomCostsUnderBothPlacementsAndLimits) {
  std::mt19937 rng(13);
  int faster_than_per_stage = 0, infeasible = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int ranks = 1 + static_cast<int>(rng() % 3);
    const int layers = 2 * ranks + static_cast<int>(rng() % (13 - 2 * ranks));
    const PlacementKind kind = trial % 2 == 0 ? PlacementKind::kV : PlacementKind::kLoop;
    RandomCosts costs = random_costs(rng, layers, 2 * ranks);
    std::optional<double> limit;
    if (trial % 3 != 0) limit = 20.0 + static_cast<double>(rng() % 120);
    const PartitionProblem p = rank_problem(costs, ranks_of_stages(ranks, kind), limit);
    const double expected = brute_force_per_rank(p);
    const auto ranges = best_partition(p);
    if (expected == std::numeric_limits<double>::infinity()) {
      EXPECT_FALSE(ranges.has_value()) << "trial " << trial;
      ++infeasible;
      continue;
    }
    ASSERT_TRUE(ranges.has_value()) << "trial " << trial;
    expect_valid(*ranges, layers, 2 * ranks);
    if (limit) {
      EXPECT_TRUE(ranks_fit(p, *ranges)) << "trial " << trial;
    }
    EXPECT_EQ(largest_rank_cost(*ranges, p.rank_of_stage, p.time), expected) << "trial " << trial;
    // What the per-stage objective chooses, judged per rank.
    PartitionProblem per_stage = costs.problem(std::nullopt);
    const auto stage_ranges = best_partition(per_stage);
    if (largest_rank_cost(*stage_ranges, p.rank_of_stage, p.time) > expected) {
      ++faster_than_per_stage;
    }
  }
  EXPECT_GT(faster_than_per_stage, 100);  // the objectives differ, often
  EXPECT_GT(infeasible, 20);
}

// Every partition that is as good as the optimum, for the per-stage objective (empty
// rank_of_stage) or the per-rank one, with the limit on stages and ranks.
std::vector<std::vector<LayerRange>> brute_force_ties(const PartitionProblem& p, double optimum) {
  std::vector<std::vector<LayerRange>> ties;
  std::vector<LayerRange> prefix;
  every_partition(p.num_layers, p.num_stages, prefix, 0, [&](const std::vector<LayerRange>& r) {
    if (p.rank_of_stage.empty()) {
      if (p.memory_limit && largest_stage_cost(r, p.memory) > *p.memory_limit) return;
      if (largest_stage_cost(r, p.time) == optimum) ties.push_back(r);
    } else {
      if (p.memory_limit && !ranks_fit(p, r)) return;
      if (largest_rank_cost(r, p.rank_of_stage, p.time) == optimum) ties.push_back(r);
    }
  });
  return ties;
}

TEST(Partitioner, TiedPartitionsAreEveryOptimumBestFirstUnderBothObjectivesAndLimits) {
  std::mt19937 rng(29);
  int with_ties = 0, capped = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int ranks = 1 + static_cast<int>(rng() % 3);
    const int layers = 2 * ranks + static_cast<int>(rng() % (13 - 2 * ranks));
    RandomCosts costs = random_costs(rng, layers, 2 * ranks);
    std::optional<double> limit;
    if (trial % 3 != 0) limit = 30.0 + static_cast<double>(rng() % 120);
    PartitionProblem p =
        trial % 3 == 1 ? costs.problem(limit)  // per stage
                       : rank_problem(costs,
                                      ranks_of_stages(ranks, trial % 2 == 0 ? PlacementKind::kV
                                                                            : PlacementKind::kLoop),
                                      limit);
    const auto best = best_partition(p);
    if (!best) continue;
    const double optimum = p.rank_of_stage.empty()
                               ? largest_stage_cost(*best, p.time)
                               : largest_rank_cost(*best, p.rank_of_stage, p.time);
    auto expected = brute_force_ties(p, optimum);
    const int max_count = trial % 4 == 0 ? 3 : 1000;
    const auto ties = tied_partitions(p, *best, max_count);
    ASSERT_FALSE(ties.empty()) << "trial " << trial;
    EXPECT_EQ(ties.front(), *best) << "trial " << trial;
    for (const auto& ranges : ties) {
      EXPECT_NE(std::ranges::find(expected, ranges), expected.end()) << "trial " << trial;
      EXPECT_EQ(std::ranges::count(ties, ranges), 1) << "trial " << trial;
    }
    if (std::ssize(expected) <= max_count) {
      EXPECT_EQ(ties.size(), expected.size()) << "trial " << trial;
    } else {
      EXPECT_EQ(std::ssize(ties), max_count) << "trial " << trial;
      ++capped;
    }
    if (expected.size() > 1) ++with_ties;
  }
  EXPECT_GT(with_ties, 100);  // small integer costs tie often
  EXPECT_GT(capped, 10);
}

TEST(Partitioner, ZbvBalancesRankZerosFirstAndLastStage) {
  // An embedding, eight blocks, a norm and a head over 2 ranks of ZB-V: rank 0 holds stages 0
  // and 3, rank 1 stages 1 and 2.
  const RandomCosts costs{.time = {1, 2, 2, 2, 2, 2, 2, 2, 2, 1, 4},
                          .bytes = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                          .num_stages = 4};
  const PartitionProblem p = rank_problem(costs, ranks_of_stages(2, PlacementKind::kV), {});
  // Per stage, no stage takes over 6, and then one rank computes 12 (every such partition).
  const std::vector<LayerRange> per_stage = *best_partition(costs.problem(std::nullopt));
  EXPECT_EQ(largest_stage_cost(per_stage, p.time), 6.0);
  EXPECT_EQ(largest_rank_cost(per_stage, p.rank_of_stage, p.time), 12.0);
  // Per rank, both ranks compute 11: rank 0 the embedding and three blocks, then the head.
  const std::vector<LayerRange> ranges = *best_partition(p);
  EXPECT_EQ(ranges, (std::vector<LayerRange>{{0, 4}, {4, 5}, {5, 10}, {10, 11}}));
  EXPECT_EQ(largest_rank_cost(ranges, p.rank_of_stage, p.time), 11.0);
}

TEST(Partitioner, PerRankKeepsEveryRankWithinTheLimitThatEachStageMeets) {
  // Equal times and bytes on 2 ranks of the loop placement: rank 0 holds stages 0 and 2.
  const RandomCosts costs{
      .time = {1, 1, 1, 1, 1, 1, 1, 1}, .bytes = {2, 2, 2, 2, 2, 2, 2, 2}, .num_stages = 4};
  const PartitionProblem unlimited =
      rank_problem(costs, ranks_of_stages(2, PlacementKind::kLoop), {});
  const std::vector<LayerRange> even = *best_partition(unlimited);
  // Two layers a stage: rank 0 needs (12 + 4) + (6 + 4) = 26, rank 1 (9 + 4) + (3 + 4) = 20.
  EXPECT_EQ(even, (std::vector<LayerRange>{{0, 2}, {2, 4}, {4, 6}, {6, 8}}));
  const PartitionProblem limited =
      rank_problem(costs, ranks_of_stages(2, PlacementKind::kLoop), 24.0);
  EXPECT_LE(largest_stage_cost(even, limited.memory), 24.0);  // each stage fits alone
  const std::vector<LayerRange> ranges = *best_partition(limited);
  EXPECT_TRUE(ranks_fit(limited, ranges));
  EXPECT_EQ(largest_rank_cost(ranges, limited.rank_of_stage, limited.time), 5.0);
  EXPECT_FALSE(best_partition(rank_problem(costs, ranks_of_stages(2, PlacementKind::kLoop), 16.0))
                   .has_value());
}

TEST(Partitioner, LargestRankCostSumsEachRanksStages) {
  RandomCosts costs{.time = {1, 2, 3, 4}, .bytes = {0, 0, 0, 0}, .num_stages = 4};
  const StageCost time = [&](int b, int e, int s) { return costs.stage_time(b, e, s); };
  const std::vector<LayerRange> ranges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}};
  EXPECT_EQ(largest_rank_cost(ranges, {0, 1, 1, 0}, time), 5.0);  // V: 1 + 4 and 2 + 3
  EXPECT_EQ(largest_rank_cost(ranges, {0, 1, 0, 1}, time), 6.0);  // loop: 1 + 3 and 2 + 4
}

}  // namespace
}  // namespace mpipe::plan
