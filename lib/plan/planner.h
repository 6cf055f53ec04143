// Planner: the one function that decides which layers each stage owns (uniform, manual, or the
// exact min-max partition of predicted stage times under a memory limit) and predicts each
// stage's compute and peak memory (training and evaluation), the bubble, the step time and the
// throughput. Pure (no MPI): `mpipe train`'s preflight (every rank, which hands the plan to the
// trainer) and `mpipe plan` call it alike, so they agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/layer_spec.h"
#include "model/model_builder.h"
#include "plan/cost_model.h"
#include "plan/memory_model.h"
#include "plan/op.h"
#include "plan/partition.h"
#include "plan/partitioner.h"
#include "plan/pipeline_config.h"
#include "plan/simulator.h"

namespace mpipe::plan {

// What the time model assumes one rank does per second. The defaults are one core of the
// development machine (AVX-512) per OpenMP thread; they set the predicted times, and the ratio
// of the first two sets what `auto` balances (the same on every rank by construction).
struct MachineRates {
  double flops_per_s = 1.0e11;  // f32 matrix products, per thread: forwards and every other FLOP
  // Per thread, where measured (`mpipe plan --calibrate`; 0: flops_per_s): a backward's input
  // gradient products, its weight-gradient products accumulated per micro-batch, and the linear
  // layers' weight gradients batched over the step's micro-batches (weight_grads: batched).
  double input_gradient_flops_per_s = 0.0;
  double weight_flops_per_s = 0.0;
  double batched_weight_flops_per_s = 0.0;
  double bytes_per_s = 4.0e9;  // memory traffic of element-wise work, copies, allocation
  // Per thread, where measured (`mpipe plan`): the optimizer phase's streaming passes over the
  // parameters (0: bytes_per_s), which run several times faster than element-wise kernels.
  double optimizer_bytes_per_s = 0.0;
  double link_bytes_per_s = 4.0e9;  // activations and gradients between neighbouring stages
  double link_latency_s = 2.0e-5;
  // OpenMP threads per rank: the predicted compute (FLOPs and memory traffic) takes 1/threads of
  // one thread's time (the kernels and element-wise loops are parallel), links do not. `auto`
  // partitions by one thread's times, so the partition does not depend on it.
  int threads = 1;
};

// The passes over a stage's parameter bytes that a step's zeroing, finite check and optimizer
// update make, each at MachineRates::bytes_per_s: the gradients zeroed and read, the values read
// and written, the gradients read again, and each of `optimizer_slots` slots read and written;
// with `clips_gradients`, also the gradients read for their norm, then read and written scaled.
double optimizer_passes(int optimizer_slots, bool clips_gradients);
// Of optimizer_passes, those over the parameters a replica updates: all but the zeroing. Under
// optimizer.shard_across_replicas a replica makes these over its shard only (the finite check,
// the norm and the clipping read its shard's summed gradients); the zeroing covers the whole
// gradient, which the next step's reduction reads.
double optimizer_shard_passes(int optimizer_slots, bool clips_gradients);

// optimizer.shard_across_replicas: the seconds a replica takes to send and receive the updated
// shards of `param_bytes` of a stage's parameters over `shards` replicas (Trainer::step: one
// MPI_Iallgatherv in place, each shard about param_bytes / D). Open MPI's libnbc allgathers
// linearly: every replica sends its shard to each other one at once, so each link carries D - 1
// shards each way, after one latency. 0 for one shard.
double shard_allgather_s(double param_bytes, int shards, double link_bytes_per_s,
                         double link_latency_s);

// Where one use of a tied matrix lies (model::TiedWeights::uses), for its exchange's cost: the
// pipeline rank holding it, and where its copy starts in its stage's parameters, of how many.
struct TiedCopyAt {
  int rank = 0;
  int64_t offset = 0;        // floats before the copy in its stage's parameter buffer
  int64_t stage_floats = 0;  // the stage's parameters, floats
};

// The tied copies' exchange and adding after the step's ops and the replicas' allreduce, before
// the loss allreduce (train::TiedCopies::sum_gradients): the seconds the busiest rank takes, on a
// link of `link_bytes_per_s` and `link_latency_s`, adding at `adding_bytes_per_s` (one thread's
// streaming rate). The matrix of `matrix_floats` goes window by window, model::kTiedExchangeFloats
// each; in each window a rank posts every send and receive it has there and waits for them all,
// so each window it has one in costs one latency and its sends over its link (its receives come
// over the other direction at once, never more than the busiest sends); then it adds the window.
// `copies`: every use's, in use order. With `shards` = 1, the ranks holding a use (the group) swap
// whole copies: each sends every use it holds to each other rank of the group, in every window
// (none when one rank holds them all), and adds, reading every use's copy and writing each copy
// it holds. With `shards` = D > 1 (the gradients reduce-scattered: the copies summed on the
// shards), each replica's owner of a part of a copy (its stage's parameters cut at s/D of them,
// the norm blocks' rounding left out) swaps the elements of that part with the owners of every
// other use's parts of those elements, except where both are one rank (a copy, read and written),
// in the windows those elements span, and adds, reading every use's elements of its part and
// writing the part. A rank holding no use takes no part.
double tied_exchange_s(const std::vector<TiedCopyAt>& copies, int64_t matrix_floats, int shards,
                       double link_bytes_per_s, double link_latency_s, double adding_bytes_per_s);

struct PlanRequest {
  PipelineConfig pipeline;       // stages and data_parallel resolved (>= 1)
  int64_t batch_size = 1;        // the mini-batch over all replicas; divisible by D x M
  int optimizer_slots = 0;       // floats of optimizer state per parameter
  int optimizer_shards = 1;      // optimizer.shard_across_replicas: D, else 1
  bool clips_gradients = false;  // optimizer.clip_norm > 0: the gradients' norm and scaling
  MachineRates rates = {};
  std::string partition_where;     // "exp.yaml:20: pipeline.partition", for errors
  std::string memory_limit_where;  // "exp.yaml:21: pipeline.memory_limit"
  // Examples per evaluation batch (each split into M micro-batches, evaluated forward only by one
  // replica); 0: evaluation is not planned.
  int64_t eval_batch_size = 0;
  std::string eval_batch_where;  // "exp.yaml:9: train.eval_batch_size"
  // How the run's malloc rounds each tensor (the memory limit is on the bytes the memory account
  // counts): by default from this process's environment, which `mpipe train` and `mpipe plan`
  // share under one launcher.
  plan::AllocatorModel allocator = plan::AllocatorModel::of_environment();
  // pipeline.balance: measured: the time of layers [begin, end) as stage `stage` from the ranks'
  // measurements, which the `auto` partition then balances instead of the predicted times
  // (within the memory limit as before); empty: the predicted times.
  plan::StageCost measured_time = {};
};

struct StagePlan {
  plan::LayerRange layers;
  int64_t num_params = 0;
  // Per step, over all micro-batches.
  double forward_flops = 0.0;
  double backward_flops = 0.0;
  double recompute_flops = 0.0;
  double compute_s = 0.0;    // forwards, backwards and recomputes
  double optimizer_s = 0.0;  // zeroing, clipping and the optimizer update of its parameters
  // optimizer.shard_across_replicas: the updated shards sent to every replica after the update
  // (shard_allgather_s); 0 unsharded.
  double shard_allgather_s = 0.0;
  // A tied model: on a stage holding a use of the tied matrix, the tied copies' exchange and
  // adding its rank takes part in after the step, before the optimizer phase (tied_exchange_s); 0
  // elsewhere.
  double tied_exchange_s = 0.0;
  // Bytes of the activations (its output's live set) and gradients (its input's) it sends per
  // step: every micro-batch's, none past the model's ends.
  double sent_bytes = 0.0;
  plan::StashProfile stash;  // the moment of the peak
  plan::StageMemory memory;
  // The stage's part of its rank's predicted peak while evaluating (none when evaluation is not
  // planned; the stage's whole peak at v = 1).
  plan::StageMemory evaluation;
  bool fits = true;  // training and evaluation within the memory limit (always without one)
};

// One schedule `pipeline.schedule: auto` weighed: its plan's predictions.
struct ScheduleCandidate {
  ScheduleKind schedule = ScheduleKind::kGpipe;
  Recompute recompute = Recompute::kAlways;  // the mode its plan runs (recompute: auto resolved)
  double step_s = 0.0;
  double bubble_fraction = 0.0;
  std::vector<double> peak_bytes;  // per rank (PipelinePlan::rank_peak_bytes)
  bool fits = true;
};

struct PipelinePlan {
  // The schedule the stages run: the request's, or the one `auto` chose (never kAuto).
  ScheduleKind schedule = ScheduleKind::kGpipe;
  // The recompute mode the stages run: the request's, or the one `auto` chose (never kAuto).
  Recompute recompute = Recompute::kAlways;
  // How the stages compute their weight gradients: the request's, `auto` resolved once by
  // plan_pipeline (resolve_weight_grads; never kAuto). What the stages, make_program and the
  // reports read.
  WeightGrads weight_grads = WeightGrads::kAccumulate;
  // Under weight_grads: grouped, the micro-batches per group (1..M): the request's, or auto's
  // (plan::auto_weight_group, or the resumed group: resolved by plan_pipeline like weight_grads);
  // 0 otherwise.
  int weight_group = 0;
  // Every global stage, K·v of them (placed by the schedule: plan::placement_for).
  std::vector<StagePlan> stages;
  // Each rank's predicted training peak: its largest moment over one walk of its program, every
  // chunk's profile at that moment on its stage (plan::rank_moments); a stage's own peak at
  // v = 1. With v > 1 the memory limit holds for these: "exp.yaml:21: pipeline.memory_limit: rank
  // 1 (stage 1: layers 2-3, stage 3: layers 6-7) needs 1.2 MiB, over the limit of 1.0 MiB".
  std::vector<double> rank_peak_bytes;
  // Each rank's predicted peak while evaluating, every chunk's stage at once (empty when
  // evaluation is not planned); StagePlan::evaluation is each stage's part of it.
  std::vector<double> rank_evaluation_peak_bytes;
  // v: chunks per rank; the request's, or 1 when `auto` chose a schedule of one chunk per rank.
  int virtual_stages = 1;
  int64_t micro_batch_rows = 0;
  double bubble_fraction = 0.0;  // idle share of the pipeline (timeline simulation)
  double step_s = 0.0;  // simulated pipeline + allreduce (D > 1) + tie exchange + slowest optimizer
  // The simulated step's timeline (K ranks, times in seconds from the step's start): each rank's
  // compute ops and the receives it waited on, as the step's prediction ran them (`mpipe plan
  // --trace` draws it: train::plan_trace).
  SimulationResult timeline;
  double samples_per_s = 0.0;        // batch_size / step_s
  double largest_stage_share = 0.0;  // the slowest stage's share of all compute
  // One line when the plan cannot run within the memory limit (the partition shown is then the
  // one with the smallest peak); empty when it can.
  std::string problem;
  std::vector<std::string> advice;  // short suggestions for `mpipe plan`
  MachineRates rates;               // what the times assume
  // Under schedule: auto, every schedule weighed, in kConcreteSchedules' order (else empty).
  std::vector<ScheduleCandidate> candidates;
  bool fits() const { return problem.empty(); }
};

// Throws InputError for a partition that cannot be (counts, more stages than layers), naming
// request.partition_where. A memory limit that cannot be met is reported in `problem`.
// recompute: auto is resolved here: without a memory limit to always (GPipe's choice); with one,
// to the mode with the fastest predicted step among those whose plan fits, ties going to the
// first of never, except_last, per_layer, always; when none fits, to the one with the smallest
// largest stage (its problem is reported).
// weight_grads: auto is resolved first, once, from the settings as configured
// (resolve_weight_grads, and weight_group: auto by auto_weight_group), and the plan keeps it
// (PipelinePlan::weight_grads, weight_group). Where that choice defers the weight gradients and
// does not fit the memory limit but accumulate would, the problem says so: "<memory limit key>:
// pipeline.weight_grads: auto (grouped by 8) needs <bytes> per rank with its weight-gradient
// operands, over the limit of <limit>; set pipeline.weight_grads: accumulate, which needs <bytes>
// (auto does not choose it for you: the weights' bits would then depend on the limit)" ("auto
// (batched, kept from the checkpoint)" where a resume keeps its checkpoint's choice).
// schedule: auto is resolved before recompute, over kConcreteSchedules on K stages and, with
// pipeline.virtual_stages v > 1 (and M a multiple of K), interleaved on K·v (each planned with the
// request's recompute, auto resolved per schedule, and with weight_grads resolved as configured:
// grouped, not batched, unless set): the one with the fastest predicted step whose plan fits, ties
// going to the first; when none fits, the one whose largest stage is smallest, with the problem
// "<memory limit key>: no schedule fits <limit> per rank; the smallest need is <bytes>
// (<schedule>)".
PipelinePlan plan_pipeline(const model::ModelPlan& plan, const PlanRequest& request);

}  // namespace mpipe::plan
