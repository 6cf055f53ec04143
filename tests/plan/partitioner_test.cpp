// Tests for the exact partitioner: equal to brute force over every contiguous partition on
// random costs, with and without a stage-dependent memory limit, and its edge cases.
#include "plan/partitioner.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "core/error.h"

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
            .memory_limit = limit};
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

}  // namespace
}  // namespace mpipe::plan
