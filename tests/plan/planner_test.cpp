// Tests for the planner: auto is the exact optimum over all partitions; virtual stages, memory
// limits, their errors, evaluation, advice, and the settings it resolves.
#include "plan/planner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/byte_format.h"
#include "core/error.h"
#include "plan/placement.h"
#include "plan/schedule.h"
#include "support/small_models.h"

namespace mpipe::plan {
namespace {

using model::AttrValue;
using model::ModelSpec;
using plan::LayerRange;
using testing::dense_model;
using testing::kDenseInput;
using testing::model_of;

constexpr Recompute kModes[] = {Recompute::kAlways, Recompute::kExceptLast, Recompute::kNever,
                                Recompute::kPerLayer};

// An MLP whose first layer costs far more than the rest: uniform gives it company, auto not.
ModelSpec uneven_model() {
  return model_of({{"linear", {{"units", int64_t{512}}}},
                   {"relu", {}},
                   {"linear", {{"units", int64_t{16}}}},
                   {"relu", {}},
                   {"linear", {{"units", int64_t{16}}}},
                   {"relu", {}},
                   {"linear", {{"units", int64_t{10}}}}});
}
const Shape kUnevenInput{256};

// Six equal layers without parameters: memory is all activations, which 1F1B keeps more of on
// earlier stages, so a memory limit pulls layers towards the last stage.
ModelSpec equal_model() {
  return model_of(
      {{"tanh", {}}, {"tanh", {}}, {"tanh", {}}, {"tanh", {}}, {"tanh", {}}, {"tanh", {}}});
}
const Shape kEqualInput{256};

PlanRequest request(int stages, PartitionMode mode, std::vector<int> counts = {}) {
  PlanRequest r;
  r.pipeline.stages = stages;
  r.pipeline.micro_batches = 4;
  r.pipeline.schedule = ScheduleKind::kOneFOneB;
  r.pipeline.partition_mode = mode;
  r.pipeline.partition = std::move(counts);
  r.batch_size = 32;
  r.optimizer_slots = 2;
  r.partition_where = "exp.yaml:20: pipeline.partition";
  r.memory_limit_where = "exp.yaml:21: pipeline.memory_limit";
  // The tensors' bytes alone, whatever the environment (the allocator's rounding: below).
  r.allocator = plan::AllocatorModel::exact();
  return r;
}

PipelinePlan plan_of(const ModelSpec& spec, const Shape& input, const PlanRequest& r) {
  return plan_pipeline(model::plan_model(spec, input), r);
}

double slowest(const PipelinePlan& p) {
  double s = 0.0;
  for (const StagePlan& stage : p.stages) s = std::max(s, stage.compute_s + stage.optimizer_s);
  return s;
}

std::vector<LayerRange> ranges_of(const PipelinePlan& p) {
  std::vector<LayerRange> ranges;
  for (const StagePlan& s : p.stages) ranges.push_back(s.layers);
  return ranges;
}

TEST(Planner, AutoIsTheBestOfEveryManualPartition) {
  const ModelSpec spec = uneven_model();
  for (int k = 2; k <= 3; ++k) {
    const PipelinePlan best = plan_of(spec, kUnevenInput, request(k, PartitionMode::kAuto));
    double best_manual = 1e300;
    // Every composition of 7 layers into k parts.
    std::vector<int> counts(static_cast<size_t>(k), 1);
    const auto visit = [&](auto&& self, size_t at, int left) -> void {
      if (at + 1 == counts.size()) {
        counts[at] = left;
        best_manual = std::min(
            best_manual,
            slowest(plan_of(spec, kUnevenInput, request(k, PartitionMode::kManual, counts))));
        return;
      }
      for (int c = 1; c <= left - static_cast<int>(counts.size() - at - 1); ++c) {
        counts[at] = c;
        self(self, at + 1, left - c);
      }
    };
    visit(visit, 0, 7);
    EXPECT_EQ(slowest(best), best_manual) << k;
    EXPECT_LT(slowest(best),
              slowest(plan_of(spec, kUnevenInput, request(k, PartitionMode::kUniform))));
  }
}

TEST(Planner, UniformAndManualPartitionsAreTakenAsGiven) {
  const ModelSpec spec = uneven_model();
  EXPECT_EQ(ranges_of(plan_of(spec, kUnevenInput, request(3, PartitionMode::kUniform))),
            (std::vector<LayerRange>{{0, 3}, {3, 5}, {5, 7}}));
  EXPECT_EQ(ranges_of(plan_of(spec, kUnevenInput, request(3, PartitionMode::kManual, {1, 1, 5}))),
            (std::vector<LayerRange>{{0, 1}, {1, 2}, {2, 7}}));
}

// K = 2 ranks of v = 2 chunks under interleaved, the uneven model cut {1, 2, 3, 1}.
PlanRequest interleaved_request() {
  PlanRequest r = request(2, PartitionMode::kManual, {1, 2, 3, 1});
  r.pipeline.schedule = ScheduleKind::kInterleaved;
  r.pipeline.virtual_stages = 2;
  return r;
}

// Under virtual stages the partition cuts K·v stages in global stage order (rank r holds stages
// r, r + K, ...), and `schedule: auto` weighs interleaved (when M is a multiple of K) and, with
// v = 2, zbv on them beside the one-chunk schedules on K stages.
TEST(Planner, VirtualStagesCutKTimesVStages) {
  const ModelSpec spec = uneven_model();
  PlanRequest r = interleaved_request();
  const PipelinePlan manual = plan_of(spec, kUnevenInput, r);
  EXPECT_EQ(ranges_of(manual), (std::vector<LayerRange>{{0, 1}, {1, 3}, {3, 6}, {6, 7}}));
  r.pipeline.partition_mode = PartitionMode::kUniform;
  EXPECT_EQ(plan_of(spec, kUnevenInput, r).stages.size(), 4u);
  r.pipeline.partition_mode = PartitionMode::kAuto;
  r.pipeline.schedule = ScheduleKind::kAuto;
  const PipelinePlan chosen = plan_of(spec, kUnevenInput, r);
  ASSERT_EQ(chosen.candidates.size(), 5u);
  const ScheduleCandidate& interleaved = chosen.candidates[3];
  EXPECT_EQ(interleaved.schedule, ScheduleKind::kInterleaved);
  const ScheduleCandidate& zbv = chosen.candidates[4];
  EXPECT_EQ(zbv.schedule, ScheduleKind::kZbv);
  r.pipeline.schedule = ScheduleKind::kInterleaved;
  const PipelinePlan alone = plan_of(spec, kUnevenInput, r);
  EXPECT_EQ(alone.stages.size(), 4u);
  EXPECT_EQ(interleaved.step_s, alone.step_s);
  EXPECT_EQ(interleaved.peak_bytes, alone.rank_peak_bytes);  // per rank: 2 of them
  // The one-chunk schedules are planned on K = 2 stages.
  EXPECT_EQ(chosen.candidates[1].peak_bytes.size(), 2u);
  EXPECT_EQ(chosen.stages.size(), static_cast<size_t>(2 * chosen.virtual_stages));
  // zbv on the same cut, its ranks' peaks over the V (rank 0 holds stages 0 and 3): more than
  // either stage's, at most their sum.
  r.pipeline.schedule = ScheduleKind::kZbv;
  const PipelinePlan v = plan_of(spec, kUnevenInput, r);
  EXPECT_EQ(zbv.step_s, v.step_s);
  EXPECT_EQ(zbv.peak_bytes, v.rank_peak_bytes);
  const double first = v.stages[0].memory.total(), last = v.stages[3].memory.total();
  EXPECT_GT(v.rank_peak_bytes[0], std::max(first, last));
  EXPECT_LE(v.rank_peak_bytes[0], first + last);
  // M = 3 is no multiple of K = 2: interleaved is left out, zbv stays.
  r.pipeline.schedule = ScheduleKind::kAuto;
  r.pipeline.micro_batches = 3;
  r.batch_size = 30;
  const PipelinePlan three = plan_of(spec, kUnevenInput, r);
  ASSERT_EQ(three.candidates.size(), 4u);
  EXPECT_EQ(three.candidates.back().schedule, ScheduleKind::kZbv);
}

// With chunks a rank holds several stages at once: the limit holds for each rank's peak (every
// chunk at the rank's largest moment: more than either stage's peak, at most their sum), and the
// error names the rank and its stages.
TEST(Planner, WithChunksTheLimitHoldsForEachRanksPeakOverItsStages) {
  const ModelSpec spec = uneven_model();
  PlanRequest r = interleaved_request();
  // (Accumulating: weight_grads: auto's group would not fit either, and its problem says so.)
  r.pipeline.weight_grads = WeightGrads::kAccumulate;
  const PipelinePlan unlimited = plan_of(spec, kUnevenInput, r);
  const std::vector<double> ranks = unlimited.rank_peak_bytes;
  ASSERT_EQ(ranks.size(), 2u);
  const auto peak = [&](size_t s) { return unlimited.stages[s].memory.total(); };
  EXPECT_GT(ranks[0], std::max(peak(0), peak(2)));
  EXPECT_LE(ranks[0], peak(0) + peak(2));
  EXPECT_GT(ranks[1], std::max(peak(1), peak(3)));
  EXPECT_LE(ranks[1], peak(1) + peak(3));
  // Every stage fits this limit; the larger rank does not (in the same recompute mode).
  const double largest_stage = std::max({peak(0), peak(1), peak(2), peak(3)});
  r.pipeline.memory_limit = static_cast<int64_t>(std::ceil(largest_stage));
  r.pipeline.recompute = unlimited.recompute;
  ASSERT_GT(std::max(ranks[0], ranks[1]), static_cast<double>(r.pipeline.memory_limit));
  const PipelinePlan limited = plan_of(spec, kUnevenInput, r);
  const double limit = static_cast<double>(r.pipeline.memory_limit);
  const bool first = ranks[0] > limit;
  EXPECT_EQ(limited.problem,
            fmt::format("exp.yaml:21: pipeline.memory_limit: rank {} ({}) needs {}, over the limit "
                        "of {}",
                        first ? 0 : 1,
                        first ? "stage 0: layer 0, stage 2: layers 3-5"
                              : "stage 1: layers 1-2, stage 3: layer 6",
                        format_bytes(first ? ranks[0] : ranks[1]), format_bytes(limit)));
}

// An embedding and its tied head on two ranks: after the step each receives the other's gradient
// of the matrix in chunks of 64K floats (train::TiedCopies), 256 KiB beside its parameters, their
// gradients and optimizer state, more than its activations ever hold. On one rank nothing moves.
TEST(Planner, CountsTheTieExchangesChunkOnEachRankHoldingAUse) {
  ModelSpec spec = model_of(
      {{"embedding", {{"vocab", int64_t{1024}}, {"dim", int64_t{64}}}},
       {"linear", {{"units", int64_t{1024}}, {"bias", false}, {"tie", std::string("embedding")}}}});
  PlanRequest r = request(2, PartitionMode::kUniform);
  r.batch_size = 4;  // one token per micro-batch: activations of a few KiB
  const double chunk = 65536.0 * sizeof(float);
  const PipelinePlan two = plan_of(spec, Shape{1}, r);
  ASSERT_EQ(two.rank_peak_bytes.size(), 2u);
  for (size_t rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(two.rank_peak_bytes[rank], two.stages[rank].memory.state() + chunk) << rank;
  }
  r.pipeline.stages = 1;
  const PipelinePlan one = plan_of(spec, Shape{1}, r);
  EXPECT_LT(one.rank_peak_bytes[0], one.stages[0].memory.state() + chunk);
  // On the shards of 2 replicas the rank holding both uses receives a chunk for each.
  r.pipeline.data_parallel = 2;
  r.optimizer_shards = 2;
  r.batch_size = 8;
  const PipelinePlan sharded = plan_of(spec, Shape{1}, r);
  EXPECT_EQ(sharded.rank_peak_bytes[0], sharded.stages[0].memory.state() + 2 * chunk);
}

// The tied copies' exchange, window by window of 65536 floats: one latency per window a rank has
// a transfer in, the bytes the busiest rank sends over its link, and its adding: every use's
// elements read, each of its copies' written.
TEST(Planner, TheTieExchangeTakesALatencyPerWindowTheBusiestRanksBytesAndItsAdding) {
  const double latency = 1e-4, rate = 1e8, adding = 2e9;
  const auto exchange = [&](const std::vector<TiedCopyAt>& copies, int64_t floats, int shards) {
    return tied_exchange_s(copies, floats, shards, rate, latency, adding);
  };
  // 100000 floats: 2 windows. Unsharded, each rank of the group sends its copies to the others.
  // One rank holding both uses sends nothing; it reads both and writes both.
  EXPECT_NEAR(exchange({{.rank = 0}, {.rank = 0}}, 100000, 1), 4e5 * 4 / adding, 1e-15);
  EXPECT_NEAR(exchange({{.rank = 0}, {.rank = 1}}, 100000, 1), 2e-4 + 4e5 / rate + 3e5 * 4 / adding,
              1e-15);
  // Rank 0 holds two uses of three: it sends both to rank 1 (which sends its one back), reads
  // three copies and writes two.
  EXPECT_NEAR(exchange({{.rank = 0}, {.rank = 0}, {.rank = 1}}, 100000, 1),
              2e-4 + 8e5 / rate + 5e5 * 4 / adding, 1e-15);
  // Three ranks of one use each: each sends its copy to the two others, reads three, writes one.
  EXPECT_NEAR(exchange({{.rank = 0}, {.rank = 2}, {.rank = 1}}, 100000, 1),
              2e-4 + 8e5 / rate + 4e5 * 4 / adding, 1e-15);
  // On 2 shards, each copy a stage of its own: each replica's rank swaps its half of the matrix
  // (65536 floats, one window) with the other rank of its replica, and adds that half.
  const std::vector<TiedCopyAt> alone = {{.rank = 0, .offset = 0, .stage_floats = 131072},
                                         {.rank = 1, .offset = 0, .stage_floats = 131072}};
  EXPECT_NEAR(exchange(alone, 131072, 2), 1e-4 + 65536 * 4 / rate + 3 * 65536 * 4 / adding, 1e-15);
  // Both copies on one rank, in the two halves of its parameters: each replica's shard holds one
  // copy whole, whose elements go to the other replica, in both windows.
  const std::vector<TiedCopyAt> halves = {{.rank = 0, .offset = 0, .stage_floats = 262144},
                                          {.rank = 0, .offset = 131072, .stage_floats = 262144}};
  EXPECT_NEAR(exchange(halves, 131072, 2), 2e-4 + 131072 * 4 / rate + 3 * 131072 * 4 / adding,
              1e-15);
  // Both in the first half: replica 0 holds both, on one rank, and sends nothing: it copies each
  // beside the other (read and written) and adds both; replica 1 holds neither.
  const std::vector<TiedCopyAt> first_half = {
      {.rank = 0, .offset = 0, .stage_floats = 524288},
      {.rank = 0, .offset = 131072, .stage_floats = 524288}};
  EXPECT_NEAR(exchange(first_half, 131072, 2), 2 * (3 + 2) * 131072 * 4 / adding, 1e-15);
}

// A tied model against its untied twin (the same layers, costs and times, no exchange): with the
// embedding and the head on two ranks the step is longer by the exchange and adding after it,
// which both stages show; on one rank by the adding alone.
TEST(Planner, TheStepWaitsForTheTieExchangeAndAdding) {
  const auto spec = [](bool tied) {
    std::map<std::string, AttrValue> head = {{"units", int64_t{2048}}, {"bias", false}};
    if (tied) head["tie"] = std::string("embedding");
    return model_of(
        {{"embedding", {{"vocab", int64_t{2048}}, {"dim", int64_t{64}}}}, {"linear", head}});
  };
  PlanRequest r = request(2, PartitionMode::kUniform);
  r.batch_size = 4;
  r.rates.link_bytes_per_s = 1e8;
  r.rates.link_latency_s = 1e-4;
  r.rates.bytes_per_s = 3e9;
  r.rates.optimizer_bytes_per_s = 2e10;  // the adding's rate
  r.rates.threads = 2;                   // which one thread does
  const PipelinePlan tied = plan_of(spec(true), Shape{1}, r);
  const PipelinePlan untied = plan_of(spec(false), Shape{1}, r);
  // 2048 x 64 floats: 2 windows of 65536, each way at once; both copies read, one written.
  const double exchange = 2e-4 + 2048.0 * 64 * 4 / 1e8 + 3 * 2048.0 * 64 * 4 / 2e10;
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_NEAR(tied.stages[s].tied_exchange_s, exchange, 1e-15) << s;
    EXPECT_EQ(untied.stages[s].tied_exchange_s, 0.0) << s;
  }
  EXPECT_NEAR(tied.step_s - untied.step_s, exchange, 1e-12);
  // On the shards of 2 replicas: stage 0 holds the token matrix and one position row (131136
  // floats, cut at 65568), stage 1 the head (cut at 65536). Replica 0's rank 0 swaps elements
  // [0, 65536) with its replica's rank 1 and [65536, 65568) with the other's: 65568 floats in 2
  // windows, and adds its 65568, the most of any rank.
  r.pipeline.data_parallel = 2;
  r.optimizer_shards = 2;
  r.batch_size = 8;
  const PipelinePlan sharded = plan_of(spec(true), Shape{1}, r);
  const PipelinePlan sharded_untied = plan_of(spec(false), Shape{1}, r);
  const double on_shards = 2e-4 + 65568.0 * 4 / 1e8 + 3 * 65568.0 * 4 / 2e10;
  EXPECT_NEAR(sharded.stages[0].tied_exchange_s, on_shards, 1e-15);
  EXPECT_NEAR(sharded.step_s - sharded_untied.step_s, on_shards, 1e-12);
  // One rank, unsharded: both copies are read and written in place, at bytes_per_s where the
  // optimizer's rate is not measured.
  r.pipeline.stages = 1;
  r.pipeline.data_parallel = 1;
  r.optimizer_shards = 1;
  r.batch_size = 4;
  r.rates.optimizer_bytes_per_s = 0.0;
  const PipelinePlan one = plan_of(spec(true), Shape{1}, r);
  const double adding = 4 * 2048.0 * 64 * 4 / 3e9;
  EXPECT_NEAR(one.stages[0].tied_exchange_s, adding, 1e-15);
  EXPECT_NEAR(one.step_s - plan_of(spec(false), Shape{1}, r).step_s, adding, 1e-12);
}

// Every partition of `spec`'s layers into K·v = 4 stages on K = 2 ranks under `schedule`: the
// plan of each, with the slowest rank's compute (the sum of its stages', what the partitioner
// minimizes with chunks) and the slowest stage's.
struct Partitioned {
  PipelinePlan plan;
  double slowest_rank = 0.0;
  double slowest_stage = 0.0;
};
std::vector<Partitioned> every_partition(const ModelSpec& spec, const Shape& input,
                                         ScheduleKind schedule) {
  PlanRequest r = request(2, PartitionMode::kManual);
  r.pipeline.schedule = schedule;
  r.pipeline.virtual_stages = 2;
  const Placement placement = placement_for(schedule, 2, 2);
  const auto num_layers = static_cast<int>(spec.layers.size());
  std::vector<Partitioned> out;
  for (int a = 1; a < num_layers; ++a) {
    for (int b = 1; a + b < num_layers; ++b) {
      for (int c = 1; a + b + c < num_layers; ++c) {
        r.pipeline.partition = {a, b, c, num_layers - a - b - c};
        Partitioned p{.plan = plan_of(spec, input, r)};
        std::vector<double> ranks(2, 0.0);
        for (size_t s = 0; s < p.plan.stages.size(); ++s) {
          const double time = p.plan.stages[s].compute_s + p.plan.stages[s].optimizer_s;
          ranks[static_cast<size_t>(placement.rank_of(static_cast<int>(s)))] += time;
        }
        p.slowest_rank = std::max(ranks[0], ranks[1]);
        p.slowest_stage = slowest(p.plan);
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

// The smallest slowest rank and slowest stage among `all`; whether a partition reaches either.
struct Optima {
  double rank = 1e300, stage = 1e300;
  static constexpr double kRounding = 1e-9;  // (the same sums, added in another order)
  bool rank_tie(const Partitioned& p) const { return p.slowest_rank <= rank * (1 + kRounding); }
  bool stage_tie(const Partitioned& p) const { return p.slowest_stage <= stage * (1 + kRounding); }
};
Optima optima_of(const std::vector<Partitioned>& all) {
  Optima o;
  for (const Partitioned& p : all) {
    o.rank = std::min(o.rank, p.slowest_rank);
    o.stage = std::min(o.stage, p.slowest_stage);
  }
  return o;
}

// Auto's plan of `spec` on K = 2 ranks of 2 chunks under `schedule`.
PipelinePlan auto_with_chunks(const ModelSpec& spec, const Shape& input, ScheduleKind schedule) {
  PlanRequest r = request(2, PartitionMode::kAuto);
  r.pipeline.schedule = schedule;
  r.pipeline.virtual_stages = 2;
  return plan_of(spec, input, r);
}

// With chunks the partitioner minimizes the slowest rank (the sum of its stages' times), but two
// slow stages one after the other stall the pipeline between them: on these MLPs every partition
// that minimizes the slowest rank simulates a longer step than the one that minimizes the slowest
// stage, which the planner then keeps.
TEST(Planner, WithChunksThePerStagePartitionIsKeptWhereItsSimulatedStepIsShorter) {
  const std::vector<std::pair<ScheduleKind, std::vector<int64_t>>> cases = {
      {ScheduleKind::kInterleaved, {1024, 256, 1024, 256, 64, 64, 10}},
      {ScheduleKind::kZbv, {1024, 256, 256, 1024, 256, 10}}};
  for (const auto& [schedule, widths] : cases) {
    std::vector<std::pair<std::string, std::map<std::string, AttrValue>>> layers;
    for (int64_t units : widths) layers.push_back({"linear", {{"units", units}}});
    const ModelSpec spec = model_of(layers);
    const PipelinePlan chosen = auto_with_chunks(spec, kUnevenInput, schedule);
    const std::vector<Partitioned> all = every_partition(spec, kUnevenInput, schedule);
    const Optima optima = optima_of(all);
    EXPECT_LE(slowest(chosen), optima.stage * (1 + Optima::kRounding)) << to_string(schedule);
    for (const Partitioned& p : all) {
      if (optima.rank_tie(p)) {
        EXPECT_LT(chosen.step_s, p.plan.step_s) << to_string(schedule);
      }
    }
  }
}

// scripts/bench's scaling MLP (eight blocks of 1024 units and a ReLU, a head): many partitions
// tie on the slowest rank, and on the slowest stage, but their pipelines differ (here by 1.4% and
// 6% of the step). Auto simulates them and takes the shortest step among both objectives' ties,
// not the first tie found.
TEST(Planner, WithChunksAutoKeepsTheFastestSimulatedOfThePartitionsTiedOnEitherObjective) {
  std::vector<std::pair<std::string, std::map<std::string, AttrValue>>> layers;
  for (int block = 0; block < 8; ++block) {
    layers.push_back({"linear", {{"units", int64_t{1024}}}});
    layers.push_back({"relu", {}});
  }
  layers.push_back({"linear", {{"units", int64_t{10}}}});
  const ModelSpec spec = model_of(layers);
  const Shape input{1024};
  for (const ScheduleKind schedule : {ScheduleKind::kInterleaved, ScheduleKind::kZbv}) {
    const PipelinePlan chosen = auto_with_chunks(spec, input, schedule);
    const std::vector<Partitioned> all = every_partition(spec, input, schedule);
    const Optima optima = optima_of(all);
    double fastest_tie = 1e300, slowest_tie = 0.0;
    for (const Partitioned& p : all) {
      if (optima.rank_tie(p) || optima.stage_tie(p)) {
        fastest_tie = std::min(fastest_tie, p.plan.step_s);
        slowest_tie = std::max(slowest_tie, p.plan.step_s);
      }
    }
    EXPECT_EQ(chosen.step_s, fastest_tie) << to_string(schedule);
    EXPECT_GT(slowest_tie, fastest_tie) << to_string(schedule);  // the choice matters
  }
}

TEST(Planner, MeasuredTimeIsWhatAutoBalances) {
  const ModelSpec spec = uneven_model();  // 7 layers
  PlanRequest r = request(2, PartitionMode::kAuto);
  // Every layer 1 s, but stage 1 is twice as slow: it gets the fewest layers that balance.
  r.measured_time = [](int begin, int end, int stage) {
    return (stage == 1 ? 2.0 : 1.0) * (end - begin);
  };
  EXPECT_EQ(ranges_of(plan_of(spec, kUnevenInput, r)), (std::vector<LayerRange>{{0, 5}, {5, 7}}));
  r.measured_time = [](int begin, int end, int stage) {
    return (stage == 0 ? 2.0 : 1.0) * (end - begin);
  };
  EXPECT_EQ(ranges_of(plan_of(spec, kUnevenInput, r)),
            (std::vector<LayerRange>{{0, 2}, {2, 7}}));  // 4 and 5 s
}

TEST(Planner, PartitionErrorsNameThePartitionKey) {
  const ModelSpec spec = dense_model();  // 3 layers
  try {
    plan_of(spec, kDenseInput, request(4, PartitionMode::kAuto));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "exp.yaml:20: pipeline.partition: the model has 3 layers, fewer than the 4 "
                 "pipeline stages");
  }
  try {
    plan_of(spec, kDenseInput, request(2, PartitionMode::kManual, {1, 1}));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "exp.yaml:20: pipeline.partition: [1, 1] sums to 2 layers, but the model has 3");
  }
}

TEST(Planner, StageStateIsParametersGradientsAndOptimizerSlots) {
  const ModelSpec spec = uneven_model();
  const model::ModelPlan model = model::plan_model(spec, kUnevenInput);
  const PipelinePlan p = plan_pipeline(model, request(2, PartitionMode::kAuto));
  int64_t params = 0;
  for (const StagePlan& s : p.stages) {
    params += s.num_params;
    EXPECT_EQ(s.memory.grads, s.memory.params);
    EXPECT_EQ(s.memory.optimizer_state, 2 * s.memory.params);  // Adam's two slots
    EXPECT_GT(s.memory.kept_activations, 0.0);
    EXPECT_GT(s.memory.recompute_workspace, 0.0);  // recompute: always
    EXPECT_TRUE(s.fits);
  }
  EXPECT_EQ(params, model.num_params());
  EXPECT_TRUE(p.fits());
  EXPECT_EQ(p.micro_batch_rows, 8);
  EXPECT_GT(p.step_s, 0.0);
  EXPECT_DOUBLE_EQ(p.samples_per_s, 32.0 / p.step_s);
  EXPECT_GT(p.bubble_fraction, 0.0);
}

// The plan keeps the timeline its step was predicted from: every rank's compute ops of the
// schedule's programs, in seconds, ending at the simulated pipeline's end.
TEST(Planner, KeepsTheSimulatedTimelineOfItsStep) {
  const PipelinePlan p = plan_of(uneven_model(), kUnevenInput, request(2, PartitionMode::kAuto));
  ASSERT_EQ(p.timeline.ranks.size(), 2u);
  EXPECT_FALSE(p.timeline.deadlocked());
  EXPECT_DOUBLE_EQ(p.timeline.bubble_fraction, p.bubble_fraction);
  double end = 0.0;
  for (int r = 0; r < 2; ++r) {
    const std::vector<TimedOp>& ops = p.timeline.ranks[static_cast<size_t>(r)].compute;
    const Program program = make_program(p.schedule, 2, 4, r, 1, p.weight_grads, p.weight_group);
    Program compute;
    std::ranges::copy_if(program, std::back_inserter(compute),
                         [](const Op& op) { return !is_send(op.kind) && !is_receive(op.kind); });
    ASSERT_EQ(ops.size(), compute.size()) << r;
    for (size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(ops[i].op, compute[i]) << r << " " << i;
    end = std::max(end, ops.back().end);
  }
  EXPECT_DOUBLE_EQ(end, p.timeline.makespan);
  EXPECT_LT(p.timeline.makespan, p.step_s);  // the step adds the optimizer phase
}

TEST(Planner, TheOptimizerPhaseMakesItsPassesOverTheParametersAtTheMemoryRate) {
  PlanRequest r = request(2, PartitionMode::kAuto);  // Adam's two slots: 9 passes
  r.rates.bytes_per_s = 1e9;
  const PipelinePlan plain = plan_of(uneven_model(), kUnevenInput, r);
  r.clips_gradients = true;  // the norm's read and the scaling's read and write: 3 more
  const PipelinePlan clipped = plan_of(uneven_model(), kUnevenInput, r);
  const model::ModelPlan model = model::plan_model(uneven_model(), kUnevenInput);
  for (size_t s = 0; s < plain.stages.size(); ++s) {
    double bytes = 0.0;  // the parameters as allocated
    for (int l = plain.stages[s].layers.begin; l < plain.stages[s].layers.end; ++l) {
      bytes += static_cast<double>(model.layers[static_cast<size_t>(l)].param_bytes);
    }
    EXPECT_GT(bytes, 0.0);
    EXPECT_NEAR(plain.stages[s].optimizer_s, 9.0 * bytes / 1e9, 1e-12) << s;
    EXPECT_NEAR(clipped.stages[s].optimizer_s, 12.0 * bytes / 1e9, 1e-12) << s;
  }
}

// optimizer.shard_across_replicas: a replica checks and updates its shard only (Adam's 8 passes
// after the zeroing over a D-th of the bytes, the zeroing over all of them) and then allgathers
// the shards, as libnbc does: one latency and D - 1 shards over each link. With D not a power of
// two the gradients are allreduced as unsharded, so the step changes by the optimizer phase alone;
// with a power of two they are reduce-scattered, (D - 1) / D of them over each link instead of the
// allreduce's 2 (D - 1) / D, so the step ends sooner than that (the allreduce ends this step).
TEST(Planner, ShardedTheOptimizerUpdatesAShardAndTheStepWaitsForTheShardsAllgather) {
  const model::ModelPlan model = model::plan_model(uneven_model(), kUnevenInput);
  for (int replicas : {2, 3, 4}) {
    PlanRequest whole = request(2, PartitionMode::kAuto);  // Adam: 9 passes, 7 of them the update
    whole.pipeline.data_parallel = replicas;
    whole.batch_size = 32 * replicas;
    whole.rates.bytes_per_s = 1e9;
    whole.rates.link_bytes_per_s = 1e8;
    whole.rates.link_latency_s = 1e-4;
    PlanRequest sharded = whole;
    sharded.optimizer_shards = replicas;
    const PipelinePlan a = plan_pipeline(model, whole), b = plan_pipeline(model, sharded);
    ASSERT_EQ(a.stages.size(), b.stages.size());
    double a_last = 0.0, b_last = 0.0;  // the largest optimizer phase (a rank per stage here)
    for (size_t s = 0; s < a.stages.size(); ++s) {
      ASSERT_EQ(a.stages[s].layers.end, b.stages[s].layers.end) << "the same partition";
      double bytes = 0.0;
      for (int l = b.stages[s].layers.begin; l < b.stages[s].layers.end; ++l) {
        bytes += static_cast<double>(model.layers[static_cast<size_t>(l)].param_bytes);
      }
      EXPECT_NEAR(b.stages[s].optimizer_s, (1.0 + 8.0 / replicas) * bytes / 1e9, 1e-12) << s;
      EXPECT_EQ(a.stages[s].shard_allgather_s, 0.0);
      EXPECT_NEAR(b.stages[s].shard_allgather_s, 1e-4 + (replicas - 1.0) * bytes / replicas / 1e8,
                  1e-12)
          << s;
      a_last = std::max(a_last, a.stages[s].optimizer_s);
      b_last = std::max(b_last, b.stages[s].optimizer_s + b.stages[s].shard_allgather_s);
    }
    if (replicas == 3) {
      EXPECT_NEAR(b.step_s - a.step_s, b_last - a_last, 1e-12);
    } else {
      EXPECT_LT(b.step_s - a.step_s, b_last - a_last) << replicas;
    }
  }
}

TEST(Planner, ShardAllgatherMovesTheOtherShardsOverEachLinkAtOnce) {
  EXPECT_EQ(shard_allgather_s(1e6, 1, 1e8, 1e-4), 0.0);
  // 8 replicas of 125 kB shards: 7 of them each way, after one latency.
  EXPECT_NEAR(shard_allgather_s(1e6, 8, 1e8, 1e-4), 1e-4 + 7 * 1.25e5 / 1e8, 1e-12);
}

TEST(Planner, TheGradientTreeCountsFloorLog2MPartialSumsOfTheGradients) {
  const ModelSpec spec = uneven_model();
  const model::ModelPlan model = model::plan_model(spec, kUnevenInput);
  PlanRequest plain = request(2, PartitionMode::kAuto);  // M = 4
  plain.pipeline.weight_grads = WeightGrads::kAccumulate;
  PlanRequest tree = plain;
  tree.pipeline.weight_grads = WeightGrads::kTree;
  const PipelinePlan a = plan_pipeline(model, plain), b = plan_pipeline(model, tree);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t s = 0; s < a.stages.size(); ++s) {
    EXPECT_EQ(a.stages[s].memory.gradient_partials, 0.0);
    EXPECT_EQ(b.stages[s].memory.gradient_partials, 2 * b.stages[s].memory.grads);
    EXPECT_DOUBLE_EQ(b.stages[s].memory.total(),
                     a.stages[s].memory.total() + 2 * a.stages[s].memory.grads);
  }
}

TEST(Planner, MoreMicroBatchesShrinkTheBubble) {
  const ModelSpec spec = uneven_model();
  PlanRequest few = request(3, PartitionMode::kAuto);
  few.batch_size = 1024;
  few.pipeline.micro_batches = 2;
  PlanRequest many = few;
  many.pipeline.micro_batches = 16;
  EXPECT_GT(plan_of(spec, kUnevenInput, few).bubble_fraction,
            plan_of(spec, kUnevenInput, many).bubble_fraction);
}

// The largest stage peak of a plan.
double peak_of(const PipelinePlan& p) {
  double peak = 0.0;
  for (const StagePlan& s : p.stages) peak = std::max(peak, s.memory.total());
  return peak;
}

// equal_model without recompute under 1F1B: stage s keeps K - s micro-batches in full.
PlanRequest memory_request(int stages, int64_t limit) {
  PlanRequest r = request(stages, PartitionMode::kAuto);
  r.pipeline.recompute = Recompute::kNever;
  r.batch_size = 64;
  r.pipeline.memory_limit = limit;
  return r;
}

TEST(Planner, AutoMeetsAMemoryLimitThatTheFastestPartitionExceeds) {
  const ModelSpec spec = equal_model();
  const PipelinePlan fastest = plan_of(spec, kEqualInput, memory_request(2, 0));
  EXPECT_EQ(ranges_of(fastest), (std::vector<LayerRange>{{0, 3}, {3, 6}}));
  // A limit below the fastest partition's peak (stage 0: two micro-batches of three layers).
  const PipelinePlan limited =
      plan_of(spec, kEqualInput, memory_request(2, static_cast<int64_t>(peak_of(fastest)) - 1));
  EXPECT_TRUE(limited.fits()) << limited.problem;
  EXPECT_EQ(ranges_of(limited), (std::vector<LayerRange>{{0, 2}, {2, 6}}));
  EXPECT_LT(peak_of(limited), peak_of(fastest));
  EXPECT_GT(slowest(limited), slowest(fastest));
}

TEST(Planner, NoPartitionWithinTheLimitNamesTheSmallestLimitThatFits) {
  const ModelSpec spec = equal_model();
  // [2, 4] has the smallest peak; a limit just below it fits no partition.
  PlanRequest split = memory_request(2, 0);
  split.pipeline.partition_mode = PartitionMode::kManual;
  split.pipeline.partition = {2, 4};
  const PipelinePlan smallest = plan_of(spec, kEqualInput, split);
  const auto limit = static_cast<int64_t>(peak_of(smallest)) - 1;
  const PipelinePlan p = plan_of(spec, kEqualInput, memory_request(2, limit));
  ASSERT_FALSE(p.fits());
  EXPECT_EQ(p.problem,
            "exp.yaml:21: pipeline.memory_limit: no partition of 6 layers into 2 "
            "stages fits " +
                format_bytes(static_cast<double>(limit)) +
                " per rank; the smallest limit that fits is " + format_bytes_up(peak_of(smallest)));
  // Shown with the smallest-peak partition; the limit it names does fit.
  EXPECT_EQ(ranges_of(p), (std::vector<LayerRange>{{0, 2}, {2, 6}}));
  EXPECT_TRUE(plan_of(spec, kEqualInput, memory_request(2, static_cast<int64_t>(peak_of(smallest))))
                  .fits());
}

TEST(Planner, ALayerThatAloneExceedsTheLimitIsNamed) {
  const ModelSpec spec = uneven_model();
  PlanRequest r = request(3, PartitionMode::kAuto);
  r.pipeline.memory_limit = 1024 * 1024;
  const PipelinePlan p = plan_of(spec, kUnevenInput, r);
  ASSERT_FALSE(p.fits());
  // linear(512) on 256 inputs: 512 KiB of weights, as much for gradients, twice for Adam, and
  // its activations.
  EXPECT_TRUE(
      p.problem.starts_with("exp.yaml:21: pipeline.memory_limit: layer 0 (linear) alone needs 2."))
      << p.problem;
  EXPECT_TRUE(
      p.problem.ends_with(" MiB (parameters, gradients, optimizer state and activations), "
                          "over the limit of 1.0 MiB"))
      << p.problem;
}

TEST(Planner, AManualPartitionOverTheLimitNamesTheStage) {
  const ModelSpec spec = uneven_model();
  PlanRequest r = request(2, PartitionMode::kManual, {6, 1});
  r.pipeline.weight_grads = WeightGrads::kAccumulate;  // (as above)
  const PipelinePlan unlimited = plan_of(spec, kUnevenInput, r);
  const double stage0 = unlimited.stages[0].memory.total();
  r.pipeline.memory_limit = static_cast<int64_t>(stage0) - 1;
  const PipelinePlan p = plan_of(spec, kUnevenInput, r);
  EXPECT_FALSE(p.stages[0].fits);
  EXPECT_TRUE(p.stages[1].fits);
  EXPECT_EQ(p.problem, "exp.yaml:21: pipeline.memory_limit: stage 0 (layers 0-5) needs " +
                           format_bytes(stage0) + ", over the limit of " +
                           format_bytes(stage0 - 1));
}

// Evaluation posts every micro-batch's receive at its start (Executor::evaluate): the last stage
// holds the three not yet taken beside its first micro-batch, the first stage two sends in flight
// beside its third. Evaluation batches of the training batch: micro-batches of the same rows.
TEST(Planner, EvaluationHoldsTheReceivesPostedAtItsStartAndTheSendsInFlight) {
  PlanRequest r = request(2, PartitionMode::kUniform);
  r.eval_batch_size = r.batch_size;
  const PipelinePlan p = plan_of(uneven_model(), kUnevenInput, r);
  const double message = p.stages[0].sent_bytes / r.pipeline.micro_batches;
  ASSERT_GT(message, 0.0);
  EXPECT_DOUBLE_EQ(p.stages[1].evaluation.communication, 3 * message);
  EXPECT_DOUBLE_EQ(p.stages[0].evaluation.communication, 2 * message);
  ASSERT_EQ(p.rank_evaluation_peak_bytes.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_DOUBLE_EQ(p.rank_evaluation_peak_bytes[s], p.stages[s].evaluation.total());
  }
}

TEST(Planner, EvaluationBatchesCountAgainstTheLimit) {
  const ModelSpec spec = uneven_model();
  PlanRequest r = request(2, PartitionMode::kUniform);
  r.pipeline.recompute = Recompute::kAlways;
  r.eval_batch_where = "exp.yaml:9: train.eval_batch_size";
  r.eval_batch_size = r.batch_size;  // the training batch: below the training peak
  const PipelinePlan unlimited = plan_of(spec, kUnevenInput, r);
  r.pipeline.memory_limit = static_cast<int64_t>(
      std::max(unlimited.stages[0].memory.total(), unlimited.stages[1].memory.total()));
  const PipelinePlan same_batch = plan_of(spec, kUnevenInput, r);
  ASSERT_TRUE(same_batch.fits()) << same_batch.problem;
  for (const StagePlan& stage : same_batch.stages) {
    EXPECT_GT(stage.evaluation.total(), stage.memory.state());
    EXPECT_LT(stage.evaluation.total(), stage.memory.total());
  }
  // 64 times the batch: over the limit, named with the largest batch that fits.
  r.eval_batch_size = 64 * r.batch_size;
  const PipelinePlan large = plan_of(spec, kUnevenInput, r);
  ASSERT_FALSE(large.fits());
  const auto over = std::ranges::find_if(large.stages, [&](const StagePlan& stage) {
    return stage.evaluation.total() > static_cast<double>(r.pipeline.memory_limit);
  });
  ASSERT_NE(over, large.stages.end());
  EXPECT_FALSE(over->fits);
  const auto at_most = large.problem.substr(large.problem.rfind("at most ") + 8);
  const int64_t fitting = std::stoll(at_most);
  EXPECT_EQ(large.problem,
            fmt::format("exp.yaml:9: train.eval_batch_size: evaluation batches of {} examples need "
                        "{} on stage {} ({}), over the limit of {} (exp.yaml:21: "
                        "pipeline.memory_limit); at most {} fit",
                        r.eval_batch_size, format_bytes(over->evaluation.total()),
                        over - large.stages.begin(),
                        over->layers.size() == 1
                            ? fmt::format("layer {}", over->layers.begin)
                            : fmt::format("layers {}-{}", over->layers.begin, over->layers.end - 1),
                        format_bytes(static_cast<double>(r.pipeline.memory_limit)), fitting));
  r.eval_batch_size = fitting;
  EXPECT_TRUE(plan_of(spec, kUnevenInput, r).fits());
  r.eval_batch_size = fitting + 1;
  EXPECT_FALSE(plan_of(spec, kUnevenInput, r).fits());
}

bool has_advice(const PipelinePlan& p, const std::string& start) {
  return std::any_of(p.advice.begin(), p.advice.end(),
                     [&](const std::string& line) { return line.starts_with(start); });
}

TEST(Planner, AdviseMoreMicroBatchesWhenTheBubbleIsLarge) {
  // Micro-batches of 512 rows: compute outweighs the messages' latency, and two equal stages
  // leave the bubble alone to more micro-batches (uneven_model's stages, the slower with 62% of
  // the compute, gain under the advice's 5% at M = 8: no advice).
  PlanRequest r = request(2, PartitionMode::kAuto);
  r.batch_size = 2048;
  const PipelinePlan p = plan_of(equal_model(), kEqualInput, r);
  EXPECT_TRUE(has_advice(p, "raise pipeline.micro_batches to >= 4 x stages = 8: the bubble is "))
      << (p.advice.empty() ? "no advice" : p.advice.front());
  PlanRequest enough = r;
  enough.pipeline.micro_batches = 8;
  EXPECT_FALSE(has_advice(plan_of(equal_model(), kEqualInput, enough), "raise"));
}

TEST(Planner, AdviseMoreMicroBatchesOnlyWhenTheStepGetsFaster) {
  // Messages that take a millisecond beside microseconds of compute: at M = 8 the bubble is
  // smaller but the step longer, so no advice to go there.
  PlanRequest slow_links = request(2, PartitionMode::kAuto);
  slow_links.rates.link_latency_s = 1e-3;
  const PipelinePlan p = plan_of(uneven_model(), kUnevenInput, slow_links);
  slow_links.pipeline.micro_batches = 8;
  const PipelinePlan more = plan_of(uneven_model(), kUnevenInput, slow_links);
  ASSERT_LT(more.samples_per_s, p.samples_per_s);
  EXPECT_FALSE(has_advice(p, "raise")) << p.advice.front();
}

TEST(Planner, AdviseAutoForAnUnbalancedManualPartition) {
  const PipelinePlan p =
      plan_of(uneven_model(), kUnevenInput, request(2, PartitionMode::kManual, {6, 1}));
  EXPECT_TRUE(has_advice(p, "pipeline.partition: auto would make the slowest stage "));
}

TEST(Planner, AdviseRecomputeWhenNotRecomputingExceedsTheLimit) {
  // One GPipe stage keeps all 4 micro-batches: in full, or as inputs and one recompute.
  const ModelSpec spec = equal_model();
  PlanRequest r = memory_request(1, 0);
  r.pipeline.schedule = ScheduleKind::kGpipe;
  r.pipeline.recompute = Recompute::kAlways;
  const double always = peak_of(plan_of(spec, kEqualInput, r));
  r.pipeline.recompute = Recompute::kNever;
  r.pipeline.memory_limit = static_cast<int64_t>(always) + 1;
  const PipelinePlan p = plan_of(spec, kEqualInput, r);
  ASSERT_FALSE(p.fits());
  EXPECT_TRUE(has_advice(p, "the largest stage exceeds the limit by "));
  EXPECT_TRUE(std::any_of(p.advice.begin(), p.advice.end(), [](const std::string& line) {
    return line.ends_with("; with pipeline.recompute: always (and partition: auto) it fits");
  }));
}

TEST(Planner, AdviseRecomputeNeverWhenItAlsoFits) {
  const ModelSpec spec = equal_model();
  PlanRequest r = memory_request(2, int64_t{1} << 30);
  r.pipeline.recompute = Recompute::kAlways;
  EXPECT_TRUE(has_advice(plan_of(spec, kEqualInput, r),
                         "pipeline.recompute: never also fits the limit (largest stage "));
}

// Four Transformer blocks: each keeps far more than its input (attention probabilities, the MLP).
ModelSpec block_model() {
  const std::pair<std::string, std::map<std::string, AttrValue>> block = {"transformer_block",
                                                                          {{"heads", int64_t{2}}}};
  return model_of({block, block, block, block});
}
const Shape kBlockInput{8, 16};

// One GPipe stage of block_model with 4 micro-batches of 8 examples.
PlanRequest block_request(Recompute recompute, double limit) {
  PlanRequest r = request(1, PartitionMode::kAuto);
  r.pipeline.schedule = ScheduleKind::kGpipe;
  r.pipeline.recompute = recompute;
  r.pipeline.memory_limit = static_cast<int64_t>(limit);
  return r;
}

TEST(Planner, PerLayerRecomputeKeepsEveryLayersInputAndOneLayersWorkspace) {
  const ModelSpec spec = block_model();
  const std::vector<plan::LayerCost> costs =
      plan::layer_costs(model::plan_model(spec, kBlockInput));
  // At layer i of a per-layer backward: while it is recomputed, the inputs of layers [0, i], its
  // output, what it saves and the gradient waiting for it; then the inputs of layers [0, i), what
  // it saved and its backward temporaries (input and output gradients, internals).
  double inputs = 0.0, workspace = 0.0, full = 0.0;
  for (const plan::LayerCost& c : costs) {
    const double backward =
        inputs + c.kept_bytes(8) + 8 * (c.input_bytes + c.output_bytes + c.workspace_bytes);
    inputs += 8 * c.input_bytes;
    const double recomputing =
        inputs + c.kept_bytes(8) + 8 * (2 * c.output_bytes + c.forward_workspace_bytes);
    workspace = std::max({workspace, backward, recomputing});
    full += c.kept_bytes(8);
  }
  const plan::MemoryModel memory(costs, 8, 2);
  const int layers = memory.num_layers();
  const plan::StageMemory per_layer =
      memory.stage(0, layers, {.layer_inputs = 3, .layer_recompute = true}, true, true);
  EXPECT_EQ(per_layer.kept_activations, 3 * inputs);
  EXPECT_EQ(per_layer.recompute_workspace, workspace);
  EXPECT_EQ(per_layer.transient, 0.0);  // one layer's temporaries are in the workspace
  EXPECT_LT(workspace, inputs + full);  // not every input beside the largest layer's internals
  const plan::StageMemory always =
      memory.stage(0, layers, {.inputs = 4, .recompute = true}, true, true);
  EXPECT_EQ(always.kept_activations, 4 * 8 * costs[0].input_bytes);
  EXPECT_EQ(always.recompute_workspace, full);
}

TEST(Planner, RecomputeAutoChoosesTheFastestModeThatFits) {
  const ModelSpec spec = block_model();
  std::map<Recompute, double> peak;
  std::map<Recompute, double> step;
  for (Recompute mode : kModes) {
    const PipelinePlan p = plan_of(spec, kBlockInput, block_request(mode, 0));
    EXPECT_EQ(p.recompute, mode);
    peak[mode] = peak_of(p);
    step[mode] = p.step_s;
  }
  // The model's memory order is the reverse of its speed order (per_layer as fast as always).
  EXPECT_LT(peak[Recompute::kPerLayer], peak[Recompute::kAlways]);
  EXPECT_LT(peak[Recompute::kAlways], peak[Recompute::kExceptLast]);
  EXPECT_LT(peak[Recompute::kExceptLast], peak[Recompute::kNever]);
  EXPECT_LT(step[Recompute::kNever], step[Recompute::kExceptLast]);
  EXPECT_LT(step[Recompute::kExceptLast], step[Recompute::kAlways]);
  EXPECT_EQ(step[Recompute::kPerLayer], step[Recompute::kAlways]);
  const auto chosen = [&](double limit) {
    const PipelinePlan p = plan_of(spec, kBlockInput, block_request(Recompute::kAuto, limit));
    return to_string(p.recompute) + (p.fits() ? "" : ": " + p.problem);
  };
  EXPECT_EQ(chosen(0), "always");  // no limit: GPipe's default
  EXPECT_EQ(chosen(peak[Recompute::kNever]), "never");
  EXPECT_EQ(chosen(peak[Recompute::kNever] - 1), "except_last");
  EXPECT_EQ(chosen(peak[Recompute::kExceptLast] - 1), "per_layer");  // ties go to per_layer
  EXPECT_EQ(chosen(peak[Recompute::kAlways] - 1), "per_layer");
  EXPECT_TRUE(chosen(peak[Recompute::kPerLayer] - 1)
                  .starts_with("per_layer: exp.yaml:21: pipeline.memory_limit: "));
}

TEST(Planner, ScheduleAutoChoosesTheFastestScheduleThatFits) {
  const ModelSpec spec = equal_model();
  PlanRequest r = memory_request(4, 0);
  r.pipeline.micro_batches = 8;
  r.batch_size = 64;
  std::map<ScheduleKind, PipelinePlan> each;
  for (ScheduleKind schedule : kConcreteSchedules) {
    r.pipeline.schedule = schedule;
    each.emplace(schedule, plan_of(spec, kEqualInput, r));
  }
  // Tanh layers do not split their backward: zb_h1 runs 1F1B's step at 1F1B's memory. GPipe's
  // step is predicted faster here (fewer, larger message waits), at more memory (all 8
  // micro-batches kept).
  EXPECT_EQ(each[ScheduleKind::kZbH1].step_s, each[ScheduleKind::kOneFOneB].step_s);
  EXPECT_LT(each[ScheduleKind::kGpipe].step_s, each[ScheduleKind::kOneFOneB].step_s);
  EXPECT_GT(peak_of(each[ScheduleKind::kGpipe]), peak_of(each[ScheduleKind::kOneFOneB]));
  r.pipeline.schedule = ScheduleKind::kAuto;
  const auto chosen = [&](double limit) {
    r.pipeline.memory_limit = static_cast<int64_t>(limit);
    const PipelinePlan p = plan_of(spec, kEqualInput, r);
    return to_string(p.schedule) + (p.fits() ? "" : ": " + p.problem);
  };
  EXPECT_EQ(chosen(0), "gpipe");  // the fastest
  const double one_f_one_b = peak_of(each[ScheduleKind::kOneFOneB]);
  // GPipe is over the limit; 1f1b and zb_h1 tie: the first of gpipe, 1f1b, zb_h1.
  EXPECT_EQ(chosen(one_f_one_b), "1f1b");
  const int64_t too_small = static_cast<int64_t>(one_f_one_b / 4);
  const PipelinePlan smallest = plan_of(spec, kEqualInput, [&] {
    PlanRequest s = r;
    s.pipeline.schedule = ScheduleKind::kOneFOneB;
    s.pipeline.memory_limit = too_small;
    return s;
  }());
  EXPECT_EQ(chosen(static_cast<double>(too_small)),
            fmt::format("1f1b: exp.yaml:21: pipeline.memory_limit: no schedule fits {} per rank; "
                        "the smallest need is {} (1f1b)",
                        format_bytes(static_cast<double>(too_small)),
                        format_bytes_up(peak_of(smallest))));
  // Each schedule weighed, with its own predictions.
  r.pipeline.memory_limit = 0;
  const PipelinePlan p = plan_of(spec, kEqualInput, r);
  ASSERT_EQ(p.candidates.size(), 3u);
  for (const ScheduleCandidate& c : p.candidates) {
    EXPECT_EQ(c.step_s, each[c.schedule].step_s);
    EXPECT_EQ(c.bubble_fraction, each[c.schedule].bubble_fraction);
    EXPECT_EQ(c.peak_bytes.size(), 4u);
    EXPECT_EQ(*std::ranges::max_element(c.peak_bytes), peak_of(each[c.schedule]));
  }
}

TEST(Planner, AdviseTheRecomputeModeAutoWouldChoose) {
  const ModelSpec spec = block_model();
  const double always = peak_of(plan_of(spec, kBlockInput, block_request(Recompute::kAlways, 0)));
  const PipelinePlan p = plan_of(spec, kBlockInput, block_request(Recompute::kAlways, always - 1));
  ASSERT_FALSE(p.fits());
  EXPECT_TRUE(std::any_of(p.advice.begin(), p.advice.end(), [](const std::string& line) {
    return line.starts_with("the largest stage exceeds the limit by ") &&
           line.ends_with("; with pipeline.recompute: per_layer (and partition: auto) it fits");
  }));
}

TEST(WeightGrads, AutoIsBatchedUnderGpipeWithRecomputeNeverAsConfiguredElseGrouped) {
  const auto resolved = [](ScheduleKind schedule, Recompute recompute) {
    PipelineConfig config;
    config.schedule = schedule;
    config.recompute = recompute;
    return resolve_weight_grads(config);
  };
  EXPECT_EQ(resolved(ScheduleKind::kGpipe, Recompute::kNever), WeightGrads::kBatched);
  EXPECT_EQ(resolved(ScheduleKind::kOneFOneB, Recompute::kNever), WeightGrads::kGrouped);
  EXPECT_EQ(resolved(ScheduleKind::kGpipe, Recompute::kAlways), WeightGrads::kGrouped);
  EXPECT_EQ(resolved(ScheduleKind::kGpipe, Recompute::kAuto), WeightGrads::kGrouped);
  EXPECT_EQ(resolved(ScheduleKind::kAuto, Recompute::kNever), WeightGrads::kGrouped);
  EXPECT_EQ(resolved(ScheduleKind::kZbv, Recompute::kPerLayer), WeightGrads::kGrouped);
  PipelineConfig explicit_choice;
  explicit_choice.weight_grads = WeightGrads::kBatched;  // with recompute: auto
  EXPECT_EQ(resolve_weight_grads(explicit_choice), WeightGrads::kBatched);
}

// On a resumed run, auto keeps what the checkpoint's run resolved it to, unless its group is over
// the resumed run's M; a setting other than auto is the setting.
TEST(WeightGrads, AutoKeepsTheResumedChoice) {
  PipelineConfig config;
  config.micro_batches = 4;
  config.schedule = ScheduleKind::kZbH1;
  config.resumed_weight_grads = WeightGrads::kAccumulate;
  EXPECT_TRUE(keeps_resumed_weight_grads(config));
  EXPECT_EQ(resolve_weight_grads(config), WeightGrads::kAccumulate);
  config.resumed_weight_grads = WeightGrads::kGrouped;
  config.resumed_weight_group = 4;
  EXPECT_EQ(resolve_weight_grads(config), WeightGrads::kGrouped);
  config.micro_batches = 2;  // (a resume may trade M for D)
  EXPECT_FALSE(keeps_resumed_weight_grads(config));
  EXPECT_EQ(resolve_weight_grads(config), WeightGrads::kGrouped);
  config.resumed_weight_grads = WeightGrads::kAccumulate;
  config.weight_grads = WeightGrads::kTree;
  EXPECT_FALSE(keeps_resumed_weight_grads(config));
  EXPECT_EQ(resolve_weight_grads(config), WeightGrads::kTree);
}

// The plan keeps weight_grads resolved once, from the settings as configured: not from the
// recompute mode or the schedule `auto` chooses, nor the memory limit (what the stages, programs
// and reports read); grouped by the same group at every K and under every schedule.
TEST(Planner, KeepsWeightGradsResolvedFromTheSettingsAsConfigured) {
  PlanRequest r = request(2, PartitionMode::kUniform);
  r.pipeline.schedule = ScheduleKind::kGpipe;
  r.pipeline.recompute = Recompute::kNever;
  EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_grads, WeightGrads::kBatched);
  r.pipeline.recompute = Recompute::kAuto;
  r.pipeline.memory_limit = int64_t{1} << 40;  // every mode fits: auto chooses the fastest
  const PipelinePlan chosen = plan_of(dense_model(), kDenseInput, r);
  EXPECT_EQ(chosen.recompute, Recompute::kNever);
  EXPECT_EQ(chosen.weight_grads, WeightGrads::kGrouped);
  EXPECT_EQ(chosen.weight_group, 4);  // 8 rows each: all 4
  r.pipeline.recompute = Recompute::kNever;
  r.pipeline.schedule = ScheduleKind::kAuto;
  EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_grads, WeightGrads::kGrouped);
  r.pipeline.weight_grads = WeightGrads::kTree;
  EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_grads, WeightGrads::kTree);
  r.pipeline.weight_grads = WeightGrads::kAuto;
  r.pipeline.memory_limit = 0;
  r.batch_size = 4096;  // 1024 rows each: a group of one, which is accumulate
  EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_grads, WeightGrads::kAccumulate);
  EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_group, 0);
  r.batch_size = 1024;
  r.pipeline.micro_batches = 8;  // 128 rows each: groups of 2
  for (int stages : {1, 2}) {
    r.pipeline.stages = stages;
    for (ScheduleKind schedule :
         {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB, ScheduleKind::kZbH1, ScheduleKind::kZbv}) {
      if (schedule == ScheduleKind::kZbv && stages > 1) continue;  // (4 stages of 3 layers)
      r.pipeline.schedule = schedule;
      r.pipeline.virtual_stages = schedule == ScheduleKind::kZbv ? 2 : 1;
      r.pipeline.recompute = Recompute::kAlways;
      const PipelinePlan p = plan_of(dense_model(), kDenseInput, r);
      EXPECT_EQ(p.weight_grads, WeightGrads::kGrouped);
      EXPECT_EQ(p.weight_group, 2);
    }
  }
}

// A resumed run's auto keeps its checkpoint's group, where the rule would now choose another.
TEST(Planner, KeepsTheResumedWeightGroup) {
  PlanRequest r = request(2, PartitionMode::kUniform);
  r.pipeline.resumed_weight_grads = WeightGrads::kGrouped;
  r.pipeline.resumed_weight_group = 3;
  const PipelinePlan p = plan_of(dense_model(), kDenseInput, r);
  EXPECT_EQ(p.weight_grads, WeightGrads::kGrouped);
  EXPECT_EQ(p.weight_group, 3);
  r.pipeline.resumed_weight_grads = WeightGrads::kAccumulate;
  r.pipeline.resumed_weight_group = 0;
  EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_grads, WeightGrads::kAccumulate);
}

// Where auto's group does not fit the memory limit and accumulating would, the plan says so and
// names accumulate, rather than choosing it (the bits would then depend on the limit).
TEST(Planner, SaysWhenAutosGroupIsOverTheLimitAndAccumulateFits) {
  PlanRequest r = request(1, PartitionMode::kUniform);  // 1f1b, 4 micro-batches of 8 rows
  r.pipeline.recompute = Recompute::kNever;
  PlanRequest accumulating = r;
  accumulating.pipeline.weight_grads = WeightGrads::kAccumulate;
  const PipelinePlan a = plan_of(dense_model(), kDenseInput, accumulating);
  const PipelinePlan g = plan_of(dense_model(), kDenseInput, r);
  ASSERT_EQ(g.weight_group, 4);
  ASSERT_GT(g.rank_peak_bytes[0], a.rank_peak_bytes[0]);
  r.pipeline.memory_limit = static_cast<int64_t>(a.rank_peak_bytes[0]);
  const PipelinePlan over = plan_of(dense_model(), kDenseInput, r);
  EXPECT_EQ(over.weight_grads, WeightGrads::kGrouped);
  EXPECT_EQ(over.problem,
            fmt::format("exp.yaml:21: pipeline.memory_limit: pipeline.weight_grads: auto (grouped "
                        "by 4) needs {} per rank with its weight-gradient operands, over the limit "
                        "of {}; set pipeline.weight_grads: accumulate, which needs {} (auto does "
                        "not choose it for you: the weights' bits would then depend on the limit)",
                        format_bytes_up(g.rank_peak_bytes[0]),
                        format_bytes(static_cast<double>(r.pipeline.memory_limit)),
                        format_bytes_up(a.rank_peak_bytes[0])));
  accumulating.pipeline.memory_limit = r.pipeline.memory_limit;
  EXPECT_TRUE(plan_of(dense_model(), kDenseInput, accumulating).fits());
  r.pipeline.memory_limit = static_cast<int64_t>(a.rank_peak_bytes[0]) - 1;  // neither fits
  EXPECT_FALSE(
      plan_of(dense_model(), kDenseInput, r)
          .problem.starts_with("exp.yaml:21: pipeline.memory_limit: pipeline.weight_grads: auto"));
}

// weight_group: auto, resolved once from the model, the batch and M (rows of 256 at most M), the
// same at every K; an explicit group is kept; the other weight-gradient modes keep none.
TEST(Planner, ResolvesWeightGroupAutoFromTheRowsAloneAtEveryK) {
  for (int stages : {1, 2}) {
    PlanRequest r = request(stages, PartitionMode::kUniform);
    r.pipeline.weight_grads = WeightGrads::kGrouped;
    EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_group, 4);  // 8 rows each: all 4
    r.batch_size = 1024;
    r.pipeline.micro_batches = 8;  // 128 rows each: groups of 2
    EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_group, 2);
    r.pipeline.weight_group = 3;
    EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_group, 3);
    r.pipeline.weight_grads = WeightGrads::kBatched;
    EXPECT_EQ(plan_of(dense_model(), kDenseInput, r).weight_group, 0);
  }
}

// A grouped run's linear weight gradients leave the backward for the group ops, at the batched
// rate (the group's product's), and each W op copies its operands (reads and writes them at the
// memory rate): at equal rates as much compute beside the copies, less where the group's rate is
// higher, and the step with it.
TEST(Planner, TimesGroupedWeightGradientsAtTheGroupsRate) {
  PlanRequest r = request(2, PartitionMode::kUniform);
  r.pipeline.schedule = ScheduleKind::kZbH1;
  r.pipeline.recompute = Recompute::kNever;
  r.rates.weight_flops_per_s = 1e9;
  r.rates.batched_weight_flops_per_s = 1e9;
  r.pipeline.weight_grads = WeightGrads::kAccumulate;
  const PipelinePlan accumulated = plan_of(dense_model(), kDenseInput, r);
  r.pipeline.weight_grads = WeightGrads::kGrouped;
  r.pipeline.weight_group = 2;
  const PipelinePlan grouped = plan_of(dense_model(), kDenseInput, r);
  const std::vector<LayerCost> costs = layer_costs(model::plan_model(dense_model(), kDenseInput));
  for (size_t s = 0; s < grouped.stages.size(); ++s) {
    double copies = 0.0;  // every micro-batch's rows (32 in all), each operand read and written
    for (int l = grouped.stages[s].layers.begin; l < grouped.stages[s].layers.end; ++l) {
      const LayerCost& c = costs[static_cast<size_t>(l)];
      if (c.kind == "linear") copies += 32 * 2 * c.weight_grad_operand_bytes / r.rates.bytes_per_s;
    }
    EXPECT_GT(copies, 0.0) << s;
    EXPECT_NEAR(grouped.stages[s].compute_s, accumulated.stages[s].compute_s + copies,
                1e-9 * accumulated.stages[s].compute_s);
  }
  r.rates.batched_weight_flops_per_s = 1e10;
  const PipelinePlan faster = plan_of(dense_model(), kDenseInput, r);
  EXPECT_LT(faster.stages[0].compute_s, grouped.stages[0].compute_s);
  EXPECT_LT(faster.step_s, grouped.step_s);
}

// The request's allocator model reaches every stage's prediction. With micro-batches of 4096
// rows, dense_model's activations of 4096 x 5 and 4096 x 6 floats (80 and 96 KiB) are mapped under
// a 64 KiB mmap threshold: each counts up to a page more; under mpipe's setting every tensor
// counts a few bytes more (fewer than 64 tensors are alive at a stage's peak).
TEST(Planner, PredictsTheBytesTheAllocatorCounts) {
  PlanRequest r = request(2, PartitionMode::kUniform);
  r.batch_size = 4 * 4096;  // micro-batches of 4096 rows: activations of 80 KiB and more
  const PipelinePlan exact = plan_of(dense_model(), kDenseInput, r);
  r.allocator = plan::AllocatorModel{.mmap_threshold = 64 * 1024};
  const PipelinePlan mapped = plan_of(dense_model(), kDenseInput, r);
  r.allocator = plan::AllocatorModel{};
  const PipelinePlan heap = plan_of(dense_model(), kDenseInput, r);
  for (size_t s = 0; s < exact.stages.size(); ++s) {
    const double bytes = exact.stages[s].memory.total();
    EXPECT_GT(heap.stages[s].memory.total(), bytes);
    EXPECT_LT(heap.stages[s].memory.total(), bytes + 64 * 128.0);
    EXPECT_GT(mapped.stages[s].memory.total(), heap.stages[s].memory.total() + 4096.0);
    EXPECT_LT(mapped.stages[s].memory.total(), bytes + 64 * plan::AllocatorModel::max_overhead());
  }
}

TEST(Planner, BatchedWeightGradsHoldEveryMicroBatchsLinearOperandsFromTheBackwards) {
  // dense_model: linear 5 → 6, relu, linear 6 → 3; 4 micro-batches of 8 rows on one stage.
  PlanRequest r = request(1, PartitionMode::kAuto);
  r.pipeline.schedule = ScheduleKind::kGpipe;
  r.pipeline.recompute = Recompute::kNever;
  r.pipeline.weight_grads = WeightGrads::kAccumulate;
  const PipelinePlan accumulated = plan_of(dense_model(), kDenseInput, r);
  r.pipeline.weight_grads = WeightGrads::kAuto;  // batched under gpipe and never
  const PipelinePlan batched = plan_of(dense_model(), kDenseInput, r);
  const double operands = 4.0 * 8.0 * ((5 + 6) + (6 + 3)) * sizeof(float);
  EXPECT_EQ(accumulated.stages[0].memory.weight_grad_operands, 0.0);
  const plan::StageMemory& m = batched.stages[0].memory;
  ASSERT_TRUE(batched.stages[0].stash.backward);  // the peak is at a backward, which holds them
  EXPECT_DOUBLE_EQ(m.weight_grad_operands, operands);
  // Each linear allocates its operands in its first backward of the step, last layer first: the
  // peak is in the first linear's backward (its output and input gradients), where all are there,
  // not in the largest layer's.
  const double first_linear_backward = 8.0 * (6 + 5) * sizeof(float);
  EXPECT_DOUBLE_EQ(m.transient, first_linear_backward);
  const plan::StageMemory& a = accumulated.stages[0].memory;
  EXPECT_GT(a.transient, first_linear_backward);
  EXPECT_DOUBLE_EQ(m.total(), a.total() - a.transient + first_linear_backward + operands);
}

}  // namespace
}  // namespace mpipe::plan
