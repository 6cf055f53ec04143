// Planner: partition choice, per-stage predictions, timeline simulation of the step, advice.
#include "plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "core/byte_format.h"
#include "core/counted.h"
#include "core/error.h"
#include "model/tied_weights.h"
#include "plan/allreduce_overlap.h"
#include "plan/batch_split.h"
#include "plan/gradient_tree.h"
#include "plan/memory_check.h"
#include "plan/partitioner.h"
#include "plan/placement.h"
#include "plan/program_memory.h"
#include "plan/schedule.h"
#include "plan/simulator.h"
#include "plan/weight_groups.h"

namespace mpipe::plan {

double optimizer_passes(int optimizer_slots, bool clips_gradients) {
  return 5.0 + 2.0 * optimizer_slots + (clips_gradients ? 3.0 : 0.0);
}

double optimizer_shard_passes(int optimizer_slots, bool clips_gradients) {
  return optimizer_passes(optimizer_slots, clips_gradients) - 1.0;
}

double shard_allgather_s(double param_bytes, int shards, double link_bytes_per_s,
                         double link_latency_s) {
  if (shards < 2 || param_bytes <= 0) return 0.0;
  const double d = shards;
  return link_latency_s + (d - 1.0) * param_bytes / d / link_bytes_per_s;
}

double tied_exchange_s(const std::vector<TiedCopyAt>& copies, int64_t matrix_floats, int shards,
                       double link_bytes_per_s, double link_latency_s, double adding_bytes_per_s) {
  constexpr int64_t kWindow = model::kTiedExchangeFloats;
  const int64_t windows = (matrix_floats + kWindow - 1) / kWindow;
  const auto seconds = [&](int64_t active_windows, double sent_floats, double added_floats) {
    return static_cast<double>(active_windows) * link_latency_s +
           sent_floats * sizeof(float) / link_bytes_per_s +
           added_floats * sizeof(float) / adding_bytes_per_s;
  };
  const auto uses = static_cast<double>(copies.size());
  int ranks = 0;
  for (const TiedCopyAt& copy : copies) ranks = std::max(ranks, copy.rank + 1);
  double slowest = 0.0;
  if (shards == 1) {
    std::vector<int> held(static_cast<size_t>(ranks), 0);
    for (const TiedCopyAt& copy : copies) ++held[static_cast<size_t>(copy.rank)];
    const auto group = std::ranges::count_if(held, [](int h) { return h > 0; });
    const auto matrix = static_cast<double>(matrix_floats);
    for (const int h : held) {
      if (h == 0) continue;
      // Every use's copy read, each held copy written; nothing sent when one rank holds them all.
      const double added = (uses + h) * matrix;
      const double sent = static_cast<double>(h) * static_cast<double>(group - 1) * matrix;
      slowest = std::max(slowest, seconds(group > 1 ? windows : 0, sent, added));
    }
    return slowest;
  }
  // The elements of `copy`'s matrix that shard s of its stage's parameters holds.
  const auto part = [&](const TiedCopyAt& copy, int s) {
    const auto at = [&](int k) {
      return std::clamp<int64_t>(k * copy.stage_floats / shards - copy.offset, 0, matrix_floats);
    };
    return std::pair<int64_t, int64_t>{at(s), at(s + 1)};
  };
  for (int rank = 0; rank < ranks; ++rank) {
    for (int s = 0; s < shards; ++s) {  // the replica holding shard s
      double sent = 0.0, added = 0.0;
      std::vector<bool> active(static_cast<size_t>(windows), false);
      for (size_t x = 0; x < copies.size(); ++x) {
        if (copies[x].rank != rank) continue;
        const auto [begin, end] = part(copies[x], s);
        // Every use's elements of the part read, the part written.
        added += (uses + 1.0) * static_cast<double>(end - begin);
        for (size_t y = 0; y < copies.size(); ++y) {
          for (int other = 0; other < shards && y != x; ++other) {
            const auto [their_begin, their_end] = part(copies[y], other);
            const int64_t first = std::max(begin, their_begin), last = std::min(end, their_end);
            if (first >= last) continue;
            if (other == s && copies[y].rank == rank) {  // a copy on this rank: read and written
              added += 2.0 * static_cast<double>(last - first);
              continue;
            }
            sent += static_cast<double>(last - first);  // and as many received
            for (int64_t w = first / kWindow; w <= (last - 1) / kWindow; ++w) {
              active[static_cast<size_t>(w)] = true;
            }
          }
        }
      }
      slowest = std::max(slowest, seconds(std::ranges::count(active, true), sent, added));
    }
  }
  return slowest;
}

namespace {

// With chunks, how many partitions tied on each objective the planner simulates (plan_pipeline).
constexpr int kSimulatedTies = 32;

using plan::LayerRange;

// One thread's rate of streaming passes (the optimizer phase's, the tied copies' adding):
// measured, else the element-wise rate.
double streaming_bytes_per_s(const MachineRates& rates) {
  return rates.optimizer_bytes_per_s > 0 ? rates.optimizer_bytes_per_s : rates.bytes_per_s;
}

// Micro-batches whose forward runs twice.
int recomputed_micro_batches(Recompute recompute, int num_micro_batches) {
  switch (recompute) {
    case Recompute::kAlways:
    case Recompute::kPerLayer:
      return num_micro_batches;
    case Recompute::kExceptLast:
      return num_micro_batches - 1;
    case Recompute::kNever:
      return 0;
    case Recompute::kAuto:
      break;
  }
  throw Error("recomputed_micro_batches: recompute: auto is not resolved");
}

// Predicted seconds of layer ranges, from prefix sums over the layers (O(1) per range).
class StageTimes {
 public:
  StageTimes(const std::vector<plan::LayerCost>& costs, int64_t rows, const PlanRequest& request)
      : num_micro_batches_(request.pipeline.micro_batches),
        recomputed_(recomputed_micro_batches(request.pipeline.recompute, num_micro_batches_)),
        per_thread_(1.0 / std::max(1, request.rates.threads)) {
    const MachineRates& rates = request.rates;
    const auto rate = [&rates](double measured) {
      return measured > 0 ? measured : rates.flops_per_s;
    };
    const double input_gradient_rate = rate(rates.input_gradient_flops_per_s);
    const double weight_rate = rate(rates.weight_flops_per_s);
    const double batched_rate = rate(rates.batched_weight_flops_per_s);
    const double optimizer_rate = streaming_bytes_per_s(rates);
    // Linear layers defer their weight gradients to one product per group of micro-batches
    // (nn::Linear, Stage::defers_grads): the batched rate is that product's (its shape's, as
    // calibrated: train::calibrate_gemm_rate at the group's rows).
    const bool batched = weight_groups(request.pipeline.weight_grads, num_micro_batches_,
                                       request.pipeline.weight_group)
                             .deferred();
    const auto r = static_cast<double>(rows);
    // Sharded, a replica checks, clips and updates about 1 / D of the parameters
    // (optimizer_shard_passes).
    const double shard_passes =
        optimizer_shard_passes(request.optimizer_slots, request.clips_gradients);
    const double passes = optimizer_passes(request.optimizer_slots, request.clips_gradients) -
                          shard_passes + shard_passes / request.optimizer_shards;
    forward_.assign(costs.size() + 1, 0.0);
    backward_ = weight_ = batched_weight_ = optimizer_ = forward_;
    for (size_t i = 0; i < costs.size(); ++i) {
      const plan::LayerCost& c = costs[i];
      const bool deferred = batched && c.kind == "linear";
      forward_[i + 1] = forward_[i] + r * (c.forward_flops / rates.flops_per_s +
                                           c.forward_traffic_bytes() / rates.bytes_per_s);
      // A split layer's W op, when deferred, only copies its operands: reads and writes them.
      const double w = deferred ? 2.0 * c.weight_grad_operand_bytes / rates.bytes_per_s
                                : c.weight_grad_flops / weight_rate;
      backward_[i + 1] =
          backward_[i] + r * ((c.backward_flops - c.weight_grad_flops) / input_gradient_rate + w +
                              c.backward_traffic_bytes() / rates.bytes_per_s);
      weight_[i + 1] = weight_[i] + r * w;
      batched_weight_[i + 1] =
          batched_weight_[i] +
          (deferred ? num_micro_batches_ * r * c.weight_grad_flops / batched_rate : 0.0);
      optimizer_[i + 1] = optimizer_[i] + passes * c.param_bytes / optimizer_rate;
    }
  }
  // One micro-batch's forward, and its backward (with its share of recomputes), on the rank's
  // threads.
  double forward(int begin, int end) const { return per_thread_ * one_thread_forward(begin, end); }
  double backward(int begin, int end) const {
    return per_thread_ * one_thread_backward(begin, end);
  }
  // The part of backward() that split layers' W ops take (zero-bubble schedules).
  double weight(int begin, int end) const { return per_thread_ * sum(weight_, begin, end); }
  // weight_grads: batched or grouped: the step's deferred weight gradients, the chunk's WB ops
  // (not in backward()): all of them; a group's WB op takes its share.
  double batched_weight(int begin, int end) const {
    return per_thread_ * sum(batched_weight_, begin, end);
  }
  // All micro-batches of a step.
  double compute(int begin, int end) const {
    return num_micro_batches_ * (forward(begin, end) + backward(begin, end)) +
           batched_weight(begin, end);
  }
  double optimizer(int begin, int end) const { return per_thread_ * sum(optimizer_, begin, end); }
  // What `auto` balances: a step's compute and optimizer on one thread.
  double one_thread_total(int begin, int end) const {
    return num_micro_batches_ * (one_thread_forward(begin, end) + one_thread_backward(begin, end)) +
           sum(batched_weight_, begin, end) + sum(optimizer_, begin, end);
  }

 private:
  static double sum(const std::vector<double>& prefix, int begin, int end) {
    return prefix[static_cast<size_t>(end)] - prefix[static_cast<size_t>(begin)];
  }
  double one_thread_forward(int begin, int end) const { return sum(forward_, begin, end); }
  double one_thread_backward(int begin, int end) const {
    return sum(backward_, begin, end) +
           one_thread_forward(begin, end) * recomputed_ / num_micro_batches_;
  }
  int num_micro_batches_;
  int recomputed_;
  double per_thread_;  // 1 / threads per rank
  std::vector<double> forward_, backward_, weight_, batched_weight_, optimizer_;  // prefix sums
};

// Everything the plan of one request computes from, built once.
struct Context {
  const model::ModelPlan& plan;
  const PlanRequest& request;
  int num_layers;
  int num_stages;  // K·v: every rank's chunks
  Placement placement;
  int64_t rows;
  plan::MemoryModel memory;
  StageTimes times;
  std::optional<double> limit;
  std::vector<std::vector<RankMoment>> rank_moments;     // per rank
  std::vector<std::vector<plan::StashProfile>> moments;  // per stage: its chunk's, where it runs

  // What `auto` balances: the measured time when the request has it, else the predicted one.
  double stage_time(int begin, int end, int stage) const {
    if (request.measured_time) return request.measured_time(begin, end, stage);
    return times.one_thread_total(begin, end);
  }
  // The stage's largest candidate moment (its chunk's where it runs), and that moment.
  std::pair<plan::StageMemory, plan::StashProfile> peak(int begin, int end, int stage) const {
    std::pair<plan::StageMemory, plan::StashProfile> largest;
    bool first = true;
    for (const plan::StashProfile& moment : moments[static_cast<size_t>(stage)]) {
      const plan::StageMemory m =
          memory.stage(begin, end, moment, stage == 0, stage == num_stages - 1);
      if (first || m.total() > largest.first.total()) largest = {m, moment};
      first = false;
    }
    return largest;
  }
  plan::StageMemory stage_memory(int begin, int end, int stage) const {
    return peak(begin, end, stage).first;
  }
  // Rank `rank`'s peak (see rank_peaks) with its stages on `ranges`.
  double rank_peak(const std::vector<LayerRange>& ranges, int rank) const;
  // Whether the replicas reduce-scatter the gradients (Trainer::step): sharded over a power of
  // two of them.
  bool scattered() const {
    return request.optimizer_shards > 1 &&
           std::has_single_bit(static_cast<unsigned>(request.pipeline.data_parallel));
  }
  // With chunks, per rank: the slowest rank's time, each rank's peak within the limit.
  plan::PartitionProblem problem(bool with_limit) const {
    plan::PartitionProblem p{
        .num_layers = num_layers,
        .num_stages = num_stages,
        .time = [this](int b, int e, int s) { return stage_time(b, e, s); },
        .memory = [this](int b, int e, int s) { return stage_memory(b, e, s).total(); },
        .memory_limit = with_limit ? limit : std::nullopt,
        .rank_of_stage = {},
        .rank_memory = {}};
    if (placement.virtual_stages > 1) {
      p.rank_of_stage = placement.ranks_of_stages();
      p.rank_memory = [this](const std::vector<LayerRange>& r, int rank) {
        return rank_peak(r, rank);
      };
    }
    return p;
  }
  // Minimizes the largest stage's peak memory instead of its time.
  plan::PartitionProblem smallest_memory_problem() const {
    plan::PartitionProblem p = problem(false);
    p.time = p.memory;
    p.rank_of_stage.clear();
    return p;
  }
};

std::string layer_span(const LayerRange& r) {
  return r.size() == 1 ? fmt::format("layer {}", r.begin)
                       : fmt::format("layers {}-{}", r.begin, r.end - 1);
}

// Why no partition fits the limit: a layer too large for any stage, or the smallest limit.
std::string infeasible_message(const Context& c) {
  const std::string& where = c.request.memory_limit_where;
  const double limit = *c.limit;
  int worst = -1;
  double worst_bytes = 0.0;
  for (int layer = 0; layer < c.num_layers; ++layer) {
    // The positions a single-layer stage holding it can take.
    const int first = std::max(0, c.num_stages - (c.num_layers - layer));
    const int last = std::min(layer, c.num_stages - 1);
    double least = -1.0;
    for (int s = first; s <= last; ++s) {
      const double bytes = c.stage_memory(layer, layer + 1, s).total();
      least = least < 0 ? bytes : std::min(least, bytes);
    }
    if (least > limit && least > worst_bytes) {
      worst = layer;
      worst_bytes = least;
    }
  }
  if (worst >= 0) {
    return fmt::format(
        "{}: layer {} ({}) alone needs {} (parameters, gradients, optimizer state and "
        "activations), over the limit of {}",
        where, worst, c.plan.layers[static_cast<size_t>(worst)].kind, format_bytes(worst_bytes),
        format_bytes(limit));
  }
  const plan::PartitionProblem p = c.smallest_memory_problem();
  const double smallest = plan::largest_stage_cost(*plan::best_partition(p), p.memory);
  return fmt::format(
      "{}: no partition of {} into {} fits {} per rank; the smallest limit that fits is {}", where,
      counted(c.num_layers, "layer"), counted(c.num_stages, "stage"), format_bytes(limit),
      format_bytes_up(smallest));
}

// The partition the request asks for; `problem` is set when auto finds none within the limit.
std::vector<LayerRange> choose_partition(const Context& c, std::string& problem) {
  const PipelineConfig& pipe = c.request.pipeline;
  const std::string& where = c.request.partition_where;
  switch (pipe.partition_mode) {
    case PartitionMode::kUniform:
      return plan::partition_layers(c.num_layers, c.num_stages, {}, where);
    case PartitionMode::kManual:
      return plan::partition_layers(c.num_layers, c.num_stages, pipe.partition, where);
    case PartitionMode::kAuto:
      break;
  }
  plan::partition_layers(c.num_layers, c.num_stages, {}, where);  // at least one layer a stage
  if (auto best = plan::best_partition(c.problem(true))) return *best;
  problem = infeasible_message(c);
  return *plan::best_partition(c.smallest_memory_problem());
}

StagePlan plan_stage(const Context& c, const LayerRange& range, int stage) {
  const PipelineConfig& pipe = c.request.pipeline;
  StagePlan s;
  s.layers = range;
  const double m = pipe.micro_batches;
  const double recomputed = recomputed_micro_batches(pipe.recompute, pipe.micro_batches);
  const auto rows = static_cast<double>(c.rows);
  double param_bytes = 0.0;  // as allocated: the values buffer the replicas share
  for (int i = range.begin; i < range.end; ++i) {
    const plan::LayerCost& cost = c.memory.costs()[static_cast<size_t>(i)];
    s.num_params += cost.num_params;
    param_bytes += cost.param_bytes;
    s.forward_flops += m * rows * cost.forward_flops;
    s.backward_flops += m * rows * cost.backward_flops;
    s.recompute_flops += recomputed * rows * cost.forward_flops;
  }
  if (range.end < c.num_layers) {
    s.sent_bytes += m * rows * static_cast<double>(c.plan.live_bytes(range.end));
  }
  if (range.begin > 0) {
    s.sent_bytes += m * rows * static_cast<double>(c.plan.live_grad_bytes(range.begin));
  }
  s.compute_s = c.times.compute(range.begin, range.end);
  s.optimizer_s = c.times.optimizer(range.begin, range.end);
  s.shard_allgather_s =
      shard_allgather_s(param_bytes, c.request.optimizer_shards, c.request.rates.link_bytes_per_s,
                        c.request.rates.link_latency_s);
  std::tie(s.memory, s.stash) = c.peak(range.begin, range.end, stage);
  s.fits = !c.limit || s.memory.total() <= *c.limit;
  return s;
}

// A stage's gradients (chunk `chunk` of the rank whose timeline is given) summed over the
// replicas by MPI_Iallreduce as mpipe asks Open MPI to run it
// (comm::prefer_reduce_scatter_allgather): a reduce-scatter, then an allgather, each moving
// (D - 1) / D of a layer's gradient over every rank's link at once; under `weight_grads: tree`
// each of the log2 D levels is such an allreduce of 2 ranks (half the gradient each way, twice).
// Sharded over a power of two of replicas it is a reduce-scatter by recursive halving
// (Trainer::step): level i sends and receives 2^-(i+1) of it, (D - 1) / D in all. (The tied
// copies' exchange after it: time_tied_exchange.)
// Each layer's starts once its part of the stage's last gradient work is done, last layer first
// (Executor::between_layers): of the last backward, of the last W op where backwards are split,
// or of the WB op where they are batched. Measured on two hosts at 1 Gbit/s and 100 Mbit/s:
// scripts/bench/slow_links.sh.
std::vector<GradientTransfer> replicas_allreduce(const Context& c, const LayerRange& range,
                                                 const RankTimeline& timeline, int chunk) {
  const PipelineConfig& pipe = c.request.pipeline;
  const int replicas = pipe.data_parallel;
  if (replicas < 2) return {};
  const double transfers = c.scattered() ? (replicas - 1.0) / replicas
                           : pipe.weight_grads == WeightGrads::kTree
                               ? std::bit_width(static_cast<unsigned>(replicas)) - 1.0
                               : 2.0 * (replicas - 1) / replicas;
  const auto last =
      std::find_if(timeline.compute.rbegin(), timeline.compute.rend(), [chunk](const TimedOp& t) {
        return t.op.chunk == chunk &&
               (t.op.kind == OpKind::kBackward || t.op.kind == OpKind::kBackwardWeight ||
                t.op.kind == OpKind::kWeightGradsBatched);
      });
  check(last != timeline.compute.rend(), "replicas_allreduce: a stage without a backward");
  // A group's WB op runs its share of the deferred weight gradients.
  const WeightGroups groups =
      weight_groups(pipe.weight_grads, pipe.micro_batches, pipe.weight_group);
  const double group_share =
      last->op.micro_batch < 0
          ? 1.0
          : static_cast<double>(groups.size_of(groups.group_of(last->op.micro_batch))) /
                pipe.micro_batches;
  const auto part = [&](int layer) {  // layer's share of the work that completes its gradient
    switch (last->op.kind) {
      case OpKind::kWeightGradsBatched:
        return group_share * c.times.batched_weight(layer, layer + 1);
      case OpKind::kBackwardWeight:
        return c.times.weight(layer, layer + 1);
      default:
        return c.times.backward(layer, layer + 1);
    }
  };
  double done = last->end;
  for (int i = range.begin; i < range.end; ++i) done -= part(i);
  std::vector<GradientTransfer> gradients;
  for (int i = range.end; i-- > range.begin;) {
    done += part(i);
    const double bytes = c.memory.costs()[static_cast<size_t>(i)].param_bytes;
    if (bytes > 0) {
      gradients.push_back(
          {.ready = done, .transfer = transfers * bytes / c.request.rates.link_bytes_per_s});
    }
  }
  return gradients;
}

// A tied model: the tied copies' exchange and adding (tied_exchange_s) on each stage holding a
// use: summed on the shards where the replicas reduce-scatter (Context::scattered).
void time_tied_exchange(const Context& c, std::vector<StagePlan>& stages) {
  if (!c.plan.tied) return;
  const auto& costs = c.memory.costs();
  const auto floats = [&](int begin, int end) {
    double bytes = 0.0;
    for (int i = begin; i < end; ++i) bytes += costs[static_cast<size_t>(i)].param_bytes;
    return static_cast<int64_t>(bytes / sizeof(float));
  };
  std::vector<TiedCopyAt> copies;
  std::vector<size_t> holding;  // each use's stage
  for (const model::TiedUse& use : c.plan.tied->uses()) {
    const auto stage = static_cast<size_t>(
        std::ranges::find_if(stages,
                             [&](const StagePlan& s) {
                               return s.layers.begin <= use.layer && use.layer < s.layers.end;
                             }) -
        stages.begin());
    const LayerRange& r = stages.at(stage).layers;
    // The matrix is its layer's first parameter (an embedding's token, a linear's weight).
    copies.push_back({.rank = c.placement.rank_of(static_cast<int>(stage)),
                      .offset = floats(r.begin, use.layer),
                      .stage_floats = floats(r.begin, r.end)});
    holding.push_back(stage);
  }
  const MachineRates& rates = c.request.rates;
  const double seconds = tied_exchange_s(
      copies, c.plan.tied->matrix.numel(), c.scattered() ? c.request.pipeline.data_parallel : 1,
      rates.link_bytes_per_s, rates.link_latency_s, streaming_bytes_per_s(rates));
  for (const size_t stage : holding) stages[stage].tied_exchange_s = seconds;
}

// The step's timeline: every stage's program in simulated time, F and B per stage, and each
// stage's allreduce behind its last gradient work.
void simulate_step(const Context& c, PipelinePlan& out) {
  const PipelineConfig& pipe = c.request.pipeline;
  const MachineRates& rates = c.request.rates;
  SimulationOptions options;
  options.placement = c.placement.kind;
  std::vector<Program> programs;
  for (int r = 0; r < c.placement.num_ranks; ++r) {
    programs.push_back(make_program(pipe.schedule, c.placement.num_ranks, pipe.micro_batches, r,
                                    c.placement.virtual_stages, pipe.weight_grads,
                                    pipe.weight_group));
  }
  double largest_boundary = 0.0;
  for (int s = 0; s < c.num_stages; ++s) {  // indexed by global stage, as the simulator reads them
    const LayerRange& r = out.stages[static_cast<size_t>(s)].layers;
    options.stage_forward_times.push_back(c.times.forward(r.begin, r.end));
    options.stage_backward_times.push_back(c.times.backward(r.begin, r.end));
    options.stage_weight_times.push_back(c.times.weight(r.begin, r.end));
    options.stage_batched_weight_times.push_back(c.times.batched_weight(r.begin, r.end));
    if (s + 1 < c.num_stages) {
      // What crosses the cut: its live set, both ways (model::ModelPlan::live_bytes).
      largest_boundary = std::max(largest_boundary,
                                  static_cast<double>(c.rows) *
                                      static_cast<double>(std::max(c.plan.live_bytes(r.end),
                                                                   c.plan.live_grad_bytes(r.end))));
    }
  }
  if (c.num_stages > 1) {
    options.send_latency = rates.link_latency_s;
    options.send_transfer = largest_boundary / rates.link_bytes_per_s;
  }
  out.timeline = simulate(programs, options);
  const SimulationResult& result = out.timeline;
  double compute = 0.0, largest = 0.0, step_end = result.makespan;
  std::vector<double> rank_optimizer_s(static_cast<size_t>(c.placement.num_ranks), 0.0);
  std::vector<double> rank_end;  // each rank's last op or allreduce
  for (const RankTimeline& rank : result.ranks) {
    rank_end.push_back(rank.compute.empty() ? 0.0 : rank.compute.back().end);
  }
  for (int s = 0; s < c.num_stages; ++s) {
    const StagePlan& stage = out.stages[static_cast<size_t>(s)];
    const auto rank = static_cast<size_t>(c.placement.rank_of(s));
    // A rank updates its chunks one after another, each followed by its shards' allgather.
    rank_optimizer_s[rank] += stage.optimizer_s + stage.shard_allgather_s;
    compute += stage.compute_s;
    largest = std::max(largest, stage.compute_s);
    rank_end[rank] = std::max(rank_end[rank],
                              allreduce_end(replicas_allreduce(c, stage.layers, result.ranks[rank],
                                                               c.placement.chunk_of(s))));
    step_end = std::max(step_end, rank_end[rank]);
  }
  // The tied copies' exchange and adding start when the last of its ranks is done and end before
  // the loss allreduce, which every rank waits for before its optimizer phase.
  double tied_start = 0.0, tied_s = 0.0;
  for (int s = 0; s < c.num_stages; ++s) {
    const double seconds = out.stages[static_cast<size_t>(s)].tied_exchange_s;
    if (seconds == 0.0) continue;
    tied_start = std::max(tied_start, rank_end[static_cast<size_t>(c.placement.rank_of(s))]);
    tied_s = seconds;
  }
  step_end = std::max(step_end, tied_start + tied_s);
  out.bubble_fraction = result.bubble_fraction;
  out.step_s = step_end + *std::max_element(rank_optimizer_s.begin(), rank_optimizer_s.end());
  out.samples_per_s = out.step_s > 0 ? static_cast<double>(c.request.batch_size) / out.step_s : 0.0;
  out.largest_stage_share = compute > 0 ? largest / compute : 1.0;
}

// The predicted peak of each rank while evaluating batches of `batch` examples, and each stage's
// part of it (the stages of a rank add up to the rank's).
struct EvaluationMemory {
  std::vector<plan::StageMemory> stages;  // per global stage
  std::vector<double> ranks;
};

// Evaluation as Executor::evaluate runs it: forward only, a rank's chunks one after another, one
// micro-batch at a time (of the batch's M parts, the largest), each stage holding its input to
// its forward's end. A rank posts the receives of all its chunks' micro-batches at the start, and
// its sends share the link's kSendsInFlight. Its moments, per chunk and micro-batch: a received
// message unpacked beside the rest still posted, the forward, and the output packed beside the
// sends in flight (or, on the last stage, its loss).
EvaluationMemory evaluation_memory(const Context& c, const std::vector<StagePlan>& stages,
                                   int64_t batch) {
  const auto parts = static_cast<int>(std::min<int64_t>(c.request.pipeline.micro_batches, batch));
  const plan::MemoryModel memory(c.memory.costs(), (batch + parts - 1) / parts,
                                 c.request.optimizer_slots, c.request.allocator, c.memory.values(),
                                 c.request.optimizer_shards);
  const Placement& placement = c.placement;
  EvaluationMemory out{.stages = std::vector<plan::StageMemory>(static_cast<size_t>(c.num_stages)),
                       .ranks = std::vector<double>(static_cast<size_t>(placement.num_ranks), 0.0)};
  for (int rank = 0; rank < placement.num_ranks; ++rank) {
    const int chunks = placement.virtual_stages;
    std::vector<int> sent;  // the chunk of each send so far, in order
    for (int running = 0; running < chunks; ++running) {
      const bool first = placement.is_first(rank, running);
      const bool last = placement.is_last(rank, running);
      for (int m = 0; m < parts; ++m) {
        std::vector<plan::StashProfile> moment(static_cast<size_t>(chunks));
        for (int chunk = 0; chunk < chunks; ++chunk) {
          plan::StashProfile& p = moment[static_cast<size_t>(chunk)];
          p.backward = false;
          p.idle = chunk != running;
          if (!placement.is_first(rank, chunk) && chunk >= running) {
            p.posted_activations = chunk > running ? parts : parts - 1 - m;
          }
        }
        for (size_t k = sent.size() > plan::kSendsInFlight ? sent.size() - plan::kSendsInFlight : 0;
             k < sent.size(); ++k) {
          ++moment[static_cast<size_t>(sent[k])].sent_activations;
        }
        // The micro-batch's moments: received (not yet its input), forwarded, packed or its loss.
        plan::StashProfile& own = moment[static_cast<size_t>(running)];
        own.inputs = 1;
        own.evaluating = true;
        std::vector<plan::StashProfile> kinds = {own};
        if (!first) {
          kinds.push_back(own);
          kinds.back().inputs = 0;
          kinds.back().copy = plan::StashProfile::Copy::kActivationIn;
        }
        kinds.push_back(own);
        if (last) {
          kinds.back().loss = true;
        } else {
          kinds.back().copy = plan::StashProfile::Copy::kActivationOut;
        }
        for (const plan::StashProfile& kind : kinds) {
          moment[static_cast<size_t>(running)] = kind;
          std::vector<plan::StageMemory> parts_of(static_cast<size_t>(chunks));
          double total = 0.0;
          for (int chunk = 0; chunk < chunks; ++chunk) {
            const int s = placement.stage_of(rank, chunk);
            const LayerRange& r = stages[static_cast<size_t>(s)].layers;
            parts_of[static_cast<size_t>(chunk)] = memory.stage(
                r.begin, r.end, moment[static_cast<size_t>(chunk)], s == 0, s == c.num_stages - 1);
            total += parts_of[static_cast<size_t>(chunk)].total();
          }
          if (total <= out.ranks[static_cast<size_t>(rank)]) continue;
          out.ranks[static_cast<size_t>(rank)] = total;
          for (int chunk = 0; chunk < chunks; ++chunk) {
            out.stages[static_cast<size_t>(placement.stage_of(rank, chunk))] =
                parts_of[static_cast<size_t>(chunk)];
          }
        }
        if (!last) sent.push_back(running);
      }
    }
  }
  return out;
}

bool fits(const Context& c, const EvaluationMemory& evaluation) {
  return std::ranges::all_of(evaluation.ranks, [&](double bytes) { return bytes <= *c.limit; });
}

// The evaluation of batches too large for the limit, as one line with the largest that fits.
std::string evaluation_over_limit_message(const Context& c, const PipelinePlan& out) {
  if (out.rank_evaluation_peak_bytes.empty()) return "";  // evaluation not planned
  // The first stage whose rank is over (named with its rank's bytes: its own at v = 1).
  const auto rank_bytes = [&](const StagePlan& stage) {
    const int s = static_cast<int>(&stage - out.stages.data());
    return out.rank_evaluation_peak_bytes[static_cast<size_t>(c.placement.rank_of(s))];
  };
  const auto over = std::ranges::find_if(
      out.stages, [&](const StagePlan& stage) { return rank_bytes(stage) > *c.limit; });
  if (over == out.stages.end()) return "";
  int64_t fitting = 0, too_large = c.request.eval_batch_size;  // the largest that fits: bisected
  while (too_large - fitting > 1) {
    const int64_t middle = fitting + (too_large - fitting) / 2;
    (fits(c, evaluation_memory(c, out.stages, middle)) ? fitting : too_large) = middle;
  }
  return fmt::format(
      "{}: evaluation batches of {} examples need {} on stage {} ({}), over the limit of {} ({}); "
      "{}",
      c.request.eval_batch_where, c.request.eval_batch_size, format_bytes(rank_bytes(*over)),
      over - out.stages.begin(), layer_span(over->layers), format_bytes(*c.limit),
      c.request.memory_limit_where,
      fitting > 0 ? fmt::format("at most {} fit", fitting) : "not even one example fits");
}

// Each rank's peak: its largest moment, each chunk's profile then on its stage's layers, or the
// tie exchange after the step where the rank holds some of the tied matrix's uses, not all (or
// any, on shards).
double Context::rank_peak(const std::vector<LayerRange>& ranges, int rank) const {
  double peak = 0.0;
  for (const RankMoment& moment : rank_moments[static_cast<size_t>(rank)]) {
    double bytes = 0.0;
    for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
      const int s = placement.stage_of(rank, chunk);
      const LayerRange& r = ranges[static_cast<size_t>(s)];
      bytes += memory
                   .stage(r.begin, r.end, moment.chunks[static_cast<size_t>(chunk)], s == 0,
                          s == num_stages - 1)
                   .total();
    }
    peak = std::max(peak, bytes);
  }
  // The tie exchange after the step (train::TiedCopies::sum_gradients): the rank's state beside
  // what it receives (model::tied_exchange_bytes).
  if (!plan.tied) return peak;
  int held = 0;
  double state = 0.0;
  for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
    const int s = placement.stage_of(rank, chunk);
    const LayerRange& r = ranges[static_cast<size_t>(s)];
    for (const model::TiedUse& use : plan.tied->uses()) {
      held += r.begin <= use.layer && use.layer < r.end ? 1 : 0;
    }
    plan::StashProfile between_steps;
    between_steps.idle = true;
    between_steps.backward = false;
    state += memory.stage(r.begin, r.end, between_steps, s == 0, s == num_stages - 1).state();
  }
  const int64_t exchange = model::tied_exchange_bytes(*plan.tied, held, scattered());
  if (exchange > 0) {
    peak = std::max(peak, state + request.allocator.block_bytes(static_cast<double>(exchange)));
  }
  return peak;
}

// Each rank's peak (Context::rank_peak) with the stages of `stages`.
std::vector<double> rank_peaks(const Context& c, const std::vector<StagePlan>& stages) {
  std::vector<LayerRange> ranges;
  for (const StagePlan& stage : stages) ranges.push_back(stage.layers);
  std::vector<double> peaks;
  for (int rank = 0; rank < c.placement.num_ranks; ++rank)
    peaks.push_back(c.rank_peak(ranges, rank));
  return peaks;
}

// The first rank holding several chunks whose training is over the limit, as one line naming its
// stages; empty when none.
std::string rank_over_limit_message(const Context& c, const PipelinePlan& out) {
  const std::vector<double>& peaks = out.rank_peak_bytes;
  for (int rank = 0; rank < c.placement.num_ranks; ++rank) {
    if (peaks[static_cast<size_t>(rank)] <= *c.limit) continue;
    std::vector<std::string> stages;
    for (int chunk = 0; chunk < c.placement.virtual_stages; ++chunk) {
      const int s = c.placement.stage_of(rank, chunk);
      stages.push_back(
          fmt::format("stage {}: {}", s, layer_span(out.stages[static_cast<size_t>(s)].layers)));
    }
    return fmt::format("{}: rank {} ({}) needs {}, over the limit of {}",
                       c.request.memory_limit_where, rank, fmt::join(stages, ", "),
                       format_bytes(peaks[static_cast<size_t>(rank)]), format_bytes(*c.limit));
  }
  return "";
}

// The first stage (with chunks: rank) whose training is over the limit, or else the evaluation,
// as one line.
std::string over_limit_message(const Context& c, const PipelinePlan& out) {
  if (c.placement.virtual_stages > 1) {
    if (std::string message = rank_over_limit_message(c, out); !message.empty()) return message;
  }
  for (size_t s = 0; s < out.stages.size(); ++s) {
    const StagePlan& stage = out.stages[s];
    if (stage.memory.total() <= *c.limit) continue;
    return fmt::format("{}: stage {} ({}) needs {}, over the limit of {}",
                       c.request.memory_limit_where, s, layer_span(stage.layers),
                       format_bytes(stage.memory.total()), format_bytes(*c.limit));
  }
  return evaluation_over_limit_message(c, out);
}

// `out` (its settings) planned on the stages `ranges`.
PipelinePlan plan_on(const Context& c, PipelinePlan out, const std::vector<LayerRange>& ranges) {
  const PlanRequest& request = c.request;
  for (size_t s = 0; s < ranges.size(); ++s) {
    out.stages.push_back(plan_stage(c, ranges[s], static_cast<int>(s)));
  }
  if (request.eval_batch_size > 0) {
    EvaluationMemory evaluation = evaluation_memory(c, out.stages, request.eval_batch_size);
    for (size_t s = 0; s < out.stages.size(); ++s) {
      const double rank =
          evaluation.ranks[static_cast<size_t>(c.placement.rank_of(static_cast<int>(s)))];
      out.stages[s].evaluation = evaluation.stages[s];
      out.stages[s].fits = out.stages[s].fits && (!c.limit || rank <= *c.limit);
    }
    out.rank_evaluation_peak_bytes = std::move(evaluation.ranks);
  }
  time_tied_exchange(c, out.stages);
  out.rank_peak_bytes = rank_peaks(c, out.stages);
  if (out.problem.empty() && c.limit) out.problem = over_limit_message(c, out);
  simulate_step(c, out);
  return out;
}

// The plan without advice.
PipelinePlan plan_core(const model::ModelPlan& plan, const PlanRequest& request) {
  const PipelineConfig& pipe = request.pipeline;
  check(pipe.stages >= 1 && pipe.data_parallel >= 1 && pipe.micro_batches >= 1 &&
            pipe.weight_grads != WeightGrads::kAuto,
        "plan_pipeline: stages {}, data_parallel {}, micro_batches {} and weight_grads {} must be "
        "resolved",
        pipe.stages, pipe.data_parallel, pipe.micro_batches, to_string(pipe.weight_grads));
  if (auto problem =
          batch_split_problem(request.batch_size, pipe.micro_batches, pipe.data_parallel)) {
    throw Error(fmt::format("plan_pipeline: train.batch_size: {}", *problem));
  }
  const int64_t rows = request.batch_size / (int64_t{pipe.data_parallel} * pipe.micro_batches);
  plan::MemoryModel memory(plan::layer_costs(plan), rows, request.optimizer_slots,
                           request.allocator, plan::value_costs(plan), request.optimizer_shards);
  StageTimes times(memory.costs(), rows, request);
  Context c{.plan = plan,
            .request = request,
            .num_layers = static_cast<int>(plan.layers.size()),
            .num_stages = pipe.stages * pipe.virtual_stages,
            .placement = placement_for(pipe.schedule, pipe.stages, pipe.virtual_stages),
            .rows = rows,
            .memory = std::move(memory),
            .times = std::move(times),
            .limit = pipe.memory_limit > 0
                         ? std::optional<double>(static_cast<double>(pipe.memory_limit))
                         : std::nullopt,
            .rank_moments = {},
            .moments = {}};
  std::vector<Program> programs;  // per rank
  for (int r = 0; r < pipe.stages; ++r) {
    programs.push_back(make_program(pipe.schedule, pipe.stages, pipe.micro_batches, r,
                                    pipe.virtual_stages, pipe.weight_grads, pipe.weight_group));
  }
  const std::vector<RankMessages> messages = step_messages(programs, c.placement);
  for (int r = 0; r < pipe.stages; ++r) {
    c.rank_moments.push_back(rank_moments(programs, r, c.placement, messages, pipe.recompute));
    if (pipe.weight_grads != WeightGrads::kTree) continue;
    for (RankMoment& moment : c.rank_moments.back()) {
      for (plan::StashProfile& chunk : moment.chunks) {
        chunk.gradient_partials = GradientTree::max_waiting(pipe.micro_batches);
      }
    }
  }
  for (int s = 0; s < c.num_stages; ++s) {  // per global stage: its chunk's where it runs
    const int chunk = c.placement.chunk_of(s);
    std::vector<plan::StashProfile>& moments = c.moments.emplace_back();
    for (const RankMoment& m : c.rank_moments[static_cast<size_t>(c.placement.rank_of(s))]) {
      if (m.chunk == chunk) moments.push_back(m.chunks[static_cast<size_t>(chunk)]);
    }
  }
  PipelinePlan out;
  out.schedule = pipe.schedule;
  out.recompute = pipe.recompute;
  out.weight_grads = pipe.weight_grads;
  out.weight_group = pipe.weight_grads == WeightGrads::kGrouped ? pipe.weight_group : 0;
  out.virtual_stages = pipe.virtual_stages;
  out.micro_batch_rows = rows;
  out.rates = request.rates;
  const std::vector<LayerRange> chosen = choose_partition(c, out.problem);
  PipelinePlan planned = plan_on(c, out, chosen);
  // The slowest rank is not the step: where stages of uneven times follow each other they stall
  // the pipeline between them, and of the partitions that tie on the slowest rank (where blocks
  // cost the same, many do) some pipeline better than others. So with predicted times the
  // planner simulates the ties of both objectives, the slowest rank's and the slowest stage's, and
  // keeps the shortest step (the first found on equal steps).
  if (pipe.partition_mode == PartitionMode::kAuto && pipe.virtual_stages > 1 &&
      !request.measured_time && planned.problem.empty()) {
    for (const bool per_stage : {false, true}) {
      plan::PartitionProblem p = c.problem(true);
      if (per_stage) p.rank_of_stage.clear();
      const std::optional<std::vector<LayerRange>> best =
          per_stage ? plan::best_partition(p) : chosen;
      if (!best) continue;
      for (const std::vector<LayerRange>& ranges :
           plan::tied_partitions(p, *best, kSimulatedTies)) {
        if (ranges == chosen) continue;
        PipelinePlan other = plan_on(c, out, ranges);
        if (other.problem.empty() && other.step_s < planned.step_s) planned = std::move(other);
      }
    }
  }
  return planned;
}

double slowest_stage_s(const PipelinePlan& p) {
  double slowest = 0.0;
  for (const StagePlan& s : p.stages) slowest = std::max(slowest, s.compute_s + s.optimizer_s);
  return slowest;
}

double largest_peak(const PipelinePlan& p) {
  double largest = 0.0;
  for (double bytes : p.rank_peak_bytes) largest = std::max(largest, bytes);
  return largest;
}

// The rows of one micro-batch's weight-gradient product of the linear layers that carry most of
// their FLOPs (as train::calibrate_gemm_rate picks the shape): the micro-batch's examples times
// that layer's positions per example; the examples alone without linear layers.
long weight_product_rows(const model::ModelPlan& plan, int64_t batch_size,
                         const PipelineConfig& pipe) {
  std::map<int64_t, double> flops_by_positions;
  for (const model::LayerPlan& layer : plan.layers) {
    if (layer.kind != "linear" || layer.input.rank() == 0) continue;
    flops_by_positions[layer.input.numel() / layer.input.dims().back()] += layer.forward_flops;
  }
  const auto most = std::ranges::max_element(
      flops_by_positions, [](const auto& a, const auto& b) { return a.second < b.second; });
  const int64_t positions = most == flops_by_positions.end() ? 1 : most->first;
  const int64_t examples =
      batch_size / std::max<int64_t>(1, int64_t{pipe.data_parallel} * pipe.micro_batches);
  return static_cast<long>(std::max<int64_t>(1, examples * positions));
}

// The plan with recompute: auto resolved (see plan_pipeline), without advice; weight_grads is
// resolved already (plan_configured).
PipelinePlan plan_resolved(const model::ModelPlan& plan, const PlanRequest& request) {
  if (request.pipeline.recompute != Recompute::kAuto) return plan_core(plan, request);
  PlanRequest r = request;
  if (request.pipeline.memory_limit <= 0) {
    r.pipeline.recompute = Recompute::kAlways;
    return plan_core(plan, r);
  }
  std::optional<PipelinePlan> fastest, smallest;
  for (Recompute mode :
       {Recompute::kNever, Recompute::kExceptLast, Recompute::kPerLayer, Recompute::kAlways}) {
    r.pipeline.recompute = mode;
    PipelinePlan p = plan_core(plan, r);
    if (p.fits() && (!fastest || p.step_s < fastest->step_s)) fastest = p;
    if (!smallest || largest_peak(p) < largest_peak(*smallest)) smallest = std::move(p);
  }
  return fastest ? *fastest : *smallest;
}

// The plan of the request as configured, without advice: weight_grads: auto resolved first, from
// the settings as configured (resolve_weight_grads: so that the bits do not depend on what the
// planner chooses), then schedule: auto and recompute: auto (see plan_pipeline).
PipelinePlan plan_configured(const model::ModelPlan& plan, const PlanRequest& request) {
  PlanRequest r = request;
  r.pipeline.weight_grads = resolve_weight_grads(request.pipeline);
  if (keeps_resumed_weight_grads(request.pipeline)) {
    r.pipeline.weight_group = request.pipeline.resumed_weight_group;
  } else if (r.pipeline.weight_grads == WeightGrads::kGrouped && r.pipeline.weight_group == 0) {
    r.pipeline.weight_group = auto_weight_group(
        weight_product_rows(plan, request.batch_size, request.pipeline), r.pipeline.micro_batches);
    // weight_grads: auto's group of one is accumulate (the same arithmetic), and named so.
    if (request.pipeline.weight_grads == WeightGrads::kAuto && r.pipeline.weight_group == 1) {
      r.pipeline.weight_grads = WeightGrads::kAccumulate;
      r.pipeline.weight_group = 0;
    }
  }
  if (r.pipeline.schedule != ScheduleKind::kAuto) return plan_resolved(plan, r);
  std::optional<PipelinePlan> fastest, smallest;
  std::vector<ScheduleCandidate> candidates;
  // The one-chunk schedules on K stages, and with pipeline.virtual_stages v > 1 interleaved on K·v
  // (when M allows it: schedule_shape_problem), last in the order that breaks ties.
  std::vector<std::pair<ScheduleKind, int>> choices;  // (schedule, chunks per rank)
  for (ScheduleKind schedule : kConcreteSchedules) choices.emplace_back(schedule, 1);
  const int v = request.pipeline.virtual_stages;
  for (ScheduleKind chunked : {ScheduleKind::kInterleaved, ScheduleKind::kZbv}) {
    if (v > 1 && !schedule_shape_problem(chunked, request.pipeline.stages,
                                         request.pipeline.micro_batches, v)) {
      choices.emplace_back(chunked, v);
    }
  }
  for (const auto& [schedule, chunks] : choices) {
    r.pipeline.schedule = schedule;
    r.pipeline.virtual_stages = chunks;
    PipelinePlan p = plan_resolved(plan, r);
    ScheduleCandidate& candidate =
        candidates.emplace_back(ScheduleCandidate{.schedule = schedule,
                                                  .recompute = p.recompute,
                                                  .step_s = p.step_s,
                                                  .bubble_fraction = p.bubble_fraction,
                                                  .peak_bytes = {},
                                                  .fits = p.fits()});
    candidate.peak_bytes = p.rank_peak_bytes;
    if (p.fits() && (!fastest || p.step_s < fastest->step_s)) fastest = p;
    if (!smallest || largest_peak(p) < largest_peak(*smallest)) smallest = std::move(p);
  }
  PipelinePlan out = fastest ? *fastest : *smallest;
  if (!fastest) {
    out.problem = fmt::format("{}: no schedule fits {} per rank; the smallest need is {} ({})",
                              request.memory_limit_where,
                              format_bytes(static_cast<double>(request.pipeline.memory_limit)),
                              format_bytes_up(largest_peak(out)), to_string(out.schedule));
  }
  out.candidates = std::move(candidates);
  return out;
}

// Suggestions: more micro-batches for a large bubble, a setting that fits the limit, a better
// balanced partition, and recompute: never when memory allows it.
std::vector<std::string> make_advice(const model::ModelPlan& plan, const PlanRequest& request,
                                     const PipelinePlan& out) {
  std::vector<std::string> advice;
  const PipelineConfig& pipe = request.pipeline;
  const auto variant = [&](auto change) -> std::optional<PipelinePlan> {
    PlanRequest other = request;
    change(other.pipeline);
    if (batch_split_problem(request.batch_size, other.pipeline.micro_batches,
                            other.pipeline.data_parallel)) {
      return std::nullopt;
    }
    try {
      return plan_configured(plan, other);
    } catch (const InputError&) {
      return std::nullopt;
    }
  };
  const int k = pipe.stages;
  if (k > 1 && pipe.micro_batches < 4 * k) {
    // Only when that is predicted at least 5% faster: where messages' latency outweighs a tiny
    // model's compute, more micro-batches add more time than their smaller bubble saves.
    const std::string line = fmt::format(
        "raise pipeline.micro_batches to >= 4 x stages = {}: the bubble is {:.0f}% of the step "
        "at M = {}",
        4 * k, 100.0 * out.bubble_fraction, pipe.micro_batches);
    if (auto more = variant([k](PipelineConfig& p) { p.micro_batches = 4 * k; })) {
      if (more->samples_per_s >= 1.05 * out.samples_per_s) {
        advice.push_back(line + fmt::format(", {:.0f}% at M = {} (predicted {:.1f} vs {:.1f} "
                                            "samples/s)",
                                            100.0 * more->bubble_fraction, 4 * k,
                                            more->samples_per_s, out.samples_per_s));
      }
    } else {
      advice.push_back(line +
                       fmt::format(" (train.batch_size must then be divisible by {} x D)", 4 * k));
    }
  }
  const auto limit = static_cast<double>(request.pipeline.memory_limit);
  if (!out.fits() && request.pipeline.memory_limit > 0 && largest_peak(out) > limit) {
    const double over = largest_peak(out) - limit;
    std::string line = fmt::format("the largest stage exceeds the limit by {}", format_bytes(over));
    if (pipe.partition_mode != PartitionMode::kAuto) {
      if (auto a = variant([](PipelineConfig& p) { p.partition_mode = PartitionMode::kAuto; });
          a && a->fits()) {
        advice.push_back(line + "; with pipeline.partition: auto it fits");
        line.clear();
      }
    }
    if (!line.empty() && pipe.recompute != Recompute::kAuto) {
      if (auto a = variant([](PipelineConfig& p) {
            p.recompute = Recompute::kAuto;
            p.partition_mode = PartitionMode::kAuto;
          });
          a && a->fits()) {
        advice.push_back(
            fmt::format("{}; with pipeline.recompute: {} (and partition: auto) it fits", line,
                        to_string(a->recompute)));
        line.clear();
      }
    }
    if (!line.empty()) advice.push_back(line + "; more stages or a smaller micro-batch would help");
  }
  if (pipe.partition_mode != PartitionMode::kAuto && k > 1) {
    if (auto a = variant([](PipelineConfig& p) { p.partition_mode = PartitionMode::kAuto; });
        a && a->fits() && slowest_stage_s(*a) < 0.9 * slowest_stage_s(out)) {
      advice.push_back(
          fmt::format("pipeline.partition: auto would make the slowest stage {:.0f}% faster "
                      "(predicted {:.1f} vs {:.1f} samples/s)",
                      100.0 * (1.0 - slowest_stage_s(*a) / slowest_stage_s(out)), a->samples_per_s,
                      out.samples_per_s));
    }
  }
  if (pipe.recompute != Recompute::kNever && pipe.recompute != Recompute::kAuto &&
      pipe.memory_limit > 0 && out.fits()) {
    if (auto a = variant([](PipelineConfig& p) { p.recompute = Recompute::kNever; });
        a && a->fits()) {
      advice.push_back(fmt::format(
          "pipeline.recompute: never also fits the limit (largest stage {}) and is predicted "
          "{:.0f}% faster",
          format_bytes(largest_peak(*a)), 100.0 * (out.step_s / a->step_s - 1.0)));
    }
  }
  return advice;
}

// Where weight_grads: auto defers the weight gradients (grouped or batched) and the plan is over
// the memory limit while accumulating them would fit: the problem that says so. auto does not
// fall back to accumulate by itself, since the weights' bits would then depend on the limit.
std::optional<std::string> deferred_over_limit(const model::ModelPlan& plan,
                                               const PlanRequest& request,
                                               const PipelinePlan& out) {
  PlanRequest accumulating = request;
  accumulating.pipeline.weight_grads = WeightGrads::kAccumulate;
  const PipelinePlan other = plan_configured(plan, accumulating);
  if (!other.fits()) return std::nullopt;
  return fmt::format(
      "{}: pipeline.weight_grads: auto ({}{}) needs {} per rank with its weight-gradient "
      "operands, over the limit of {}; set pipeline.weight_grads: accumulate, which needs {} (auto "
      "does not choose it for you: the weights' bits would then depend on the limit)",
      request.memory_limit_where,
      out.weight_grads == WeightGrads::kGrouped ? fmt::format("grouped by {}", out.weight_group)
                                                : to_string(out.weight_grads),
      keeps_resumed_weight_grads(request.pipeline) ? ", kept from the checkpoint" : "",
      format_bytes_up(largest_peak(out)),
      format_bytes(static_cast<double>(request.pipeline.memory_limit)),
      format_bytes_up(largest_peak(other)));
}

}  // namespace

PipelinePlan plan_pipeline(const model::ModelPlan& plan, const PlanRequest& request) {
  PipelinePlan out = plan_configured(plan, request);
  if (!out.fits() && request.pipeline.weight_grads == WeightGrads::kAuto &&
      weight_groups(out.weight_grads, request.pipeline.micro_batches, out.weight_group)
          .deferred()) {
    out.problem = deferred_over_limit(plan, request, out).value_or(out.problem);
  }
  PlanRequest r = request;
  if (request.pipeline.schedule == ScheduleKind::kAuto) {  // advice on the schedule chosen
    r.pipeline.schedule = out.schedule;
    r.pipeline.virtual_stages = out.virtual_stages;
    r.pipeline.weight_grads = out.weight_grads;
    r.pipeline.weight_group = out.weight_group;
  }
  out.advice = make_advice(plan, r, out);
  return out;
}

}  // namespace mpipe::plan
