// The synchronous pipeline-parallel training step and the pipelined evaluation.
#include "train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <utility>

#include "comm/agree.h"
#include "comm/watchdog.h"
#include "core/error.h"
#include "core/test_stop.h"
#include "optim/clipping.h"
#include "optim/lr_schedule.h"
#include "optim/replica_shard.h"
#include "plan/rank_messages.h"
#include "plan/schedule.h"
#include "train/decay_exemption.h"
#include "train/finite_check.h"
#include "train/layer_move.h"
#include "train/message_tags.h"
#include "train/pipeline_plan.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The buffer updates (batch-norm running statistics) of every micro-batch of this step on every
// replica of this stage, in global micro-batch order: replica r's micro-batch j is global
// micro-batch r·M + j, and allgatherv concatenates in replica order. Applying them on every
// replica gives buffers that are the same everywhere and do not depend on D.
std::vector<float> gather_buffer_updates(pipeline::Stage& stage,
                                         const comm::Communicator& data_parallel) {
  std::vector<float> mine = stage.take_buffer_updates();
  if (data_parallel.size() == 1 || stage.buffer_update_size() == 0) return mine;
  // float → double → float is exact.
  const std::vector<double> all =
      data_parallel.allgatherv(std::vector<double>(mine.begin(), mine.end()));
  return {all.begin(), all.end()};
}

std::span<float> part(std::span<float> values, optim::ParamRange range) {
  return values.subspan(static_cast<size_t>(range.begin),
                        static_cast<size_t>(range.end - range.begin));
}

// The evaluated examples' outputs in example order, from `gathered`: blocks of rows in the order
// `blocks` lists them (per block its first example and its rows; the replicas took turns, so the
// blocks of several last-stage ranks interleave), which together cover [0, examples).
std::vector<float> in_example_order(std::vector<float> gathered,
                                    const std::vector<double>& blocks) {
  int64_t examples = 0;
  bool ordered = true;
  for (size_t b = 0; b + 1 < blocks.size(); b += 2) {
    ordered = ordered && static_cast<int64_t>(blocks[b]) == examples;
    examples += static_cast<int64_t>(blocks[b + 1]);
  }
  if (ordered || gathered.empty()) return gathered;  // (empty: not the root)
  const size_t per_example = gathered.size() / static_cast<size_t>(examples);
  std::vector<float> result(gathered.size());
  auto from = gathered.begin();
  for (size_t b = 0; b + 1 < blocks.size(); b += 2) {
    const auto values =
        static_cast<std::ptrdiff_t>(static_cast<size_t>(blocks[b + 1]) * per_example);
    std::copy(
        from, from + values,
        result.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(blocks[b]) * per_example));
    from += values;
  }
  return result;
}

}  // namespace

comm::Topology resolve_topology(const plan::PipelineConfig& config, int world_rank,
                                int world_size) {
  int stages = config.stages;
  int replicas = config.data_parallel;
  if (stages == 0) {
    check_input(world_size % replicas == 0,
                "pipeline.stages: auto needs the world size ({}) to be divisible by "
                "pipeline.data_parallel ({})",
                world_size, replicas);
    stages = world_size / replicas;
  }
  if (replicas == 0) {
    check_input(world_size % stages == 0,
                "pipeline.data_parallel: auto needs the world size ({}) to be divisible by "
                "pipeline.stages ({})",
                world_size, stages);
    replicas = world_size / stages;
  }
  return comm::make_topology(world_rank, world_size, stages, replicas);
}

Trainer::Trainer(const config::Experiment& experiment, RunPlan plan,
                 const comm::Communicator& world, kernels::KernelContext& kernels,
                 const data::Dataset& dataset)
    : experiment_(experiment),
      world_(world),
      kernels_(kernels),
      dataset_(dataset),
      topology_(plan.topology),
      groups_(comm::split_world(world, topology_)),
      plan_(std::move(plan.model)),
      graph_(std::make_shared<const model::ModelGraph>(plan_.graph)),
      tags_(message_tags(experiment, plan_.inputs)),
      pipeline_plan_(std::move(plan.pipeline)),
      placement_(plan::placement_for(pipeline_plan_.schedule, topology_.num_pipeline_ranks,
                                     pipeline_plan_.virtual_stages)),
      sampler_(experiment.train.seed, dataset.size(data::Split::kTrain), dataset.example_order(),
               dataset.train_mix()) {
  sharded_ = experiment.optimizer.shard_across_replicas && topology_.num_replicas > 1;
  const auto replicas = static_cast<unsigned>(topology_.num_replicas);
  scattered_ = sharded_ && std::has_single_bit(replicas);
  if (sharded_) {
    shard_order_ = groups_.data_parallel.split(
        0, optim::shard_index(topology_.replica, topology_.num_replicas),
        "the replicas in shard order");
  }
  link_ = std::make_unique<pipeline::Link>(groups_.pipeline, topology_.pipeline_rank, placement_,
                                           tags_);
  link_->set_trace(&trace_);
  build_stages();
  if ((pipeline_plan_.weight_grads == plan::WeightGrads::kTree && replicas > 2 &&
       std::has_single_bit(replicas)) ||
      scattered_) {
    tree_levels_ = comm::tree_levels(groups_.data_parallel);
  }
  for (const comm::Communicator& level : tree_levels_) reduction_levels_.push_back(&level);
  if (reduction_levels_.empty()) reduction_levels_.push_back(&groups_.data_parallel);
}

void Trainer::build_stages() {
  const auto& experiment = experiment_;
  const auto& pipe = experiment.pipeline;
  executor_.reset();  // holds the old stages
  stages_.clear();
  optimizers_.clear();
  ranges_.clear();
  shard_begins_.clear();
  for (int chunk = 0; chunk < placement_.virtual_stages; ++chunk) {
    const plan::LayerRange range =
        pipeline_plan_.stages.at(static_cast<size_t>(global_stage(chunk))).layers;
    ranges_.push_back(range);
    auto& stage = *stages_.emplace_back(std::make_unique<pipeline::Stage>(
        model::build_layers(experiment.model, plan_.inputs, range.begin, range.end),
        pipeline_plan_.recompute, pipe.micro_batches, pipeline_plan_.weight_grads, graph_,
        pipeline_plan_.weight_group));
    stage.set_layer_times(&layer_times_);
    stage.params().initialize(experiment.train.seed);
    if (sharded_) {
      shard_begins_.push_back(optim::shard_begins(
          stage.params().norm_block_begins(), stage.params().num_params(), topology_.num_replicas));
    }
  }
  std::vector<plan::LayerRange> ranges;
  for (const auto& stage : pipeline_plan_.stages) ranges.push_back(stage.layers);
  std::vector<pipeline::Stage*> chunks;
  for (const auto& stage : stages_) chunks.push_back(stage.get());
  std::optional<ReplicaShards> shards;  // scattered: the copies are summed on the shards
  if (scattered_) {
    shards = ReplicaShards{.world = &world_,
                           .replica = topology_.replica,
                           .replicas = topology_.num_replicas,
                           .pipeline_ranks = topology_.num_pipeline_ranks,
                           .tags = &tags_};
  }
  tied_copies_ = std::make_unique<TiedCopies>(
      plan_.tied, ranges, placement_, topology_.pipeline_rank, &groups_.pipeline, chunks, shards);
  tied_copies_->initialize(experiment.train.seed, experiment.model, plan_.inputs);
  loss_ = nn::make_loss(experiment.model.loss, {.label_smoothing = experiment.model.label_smoothing,
                                                .ignore_target = dataset_.pad_target()});
  if (experiment.model.loss == "cross_entropy") {
    loss_rows_per_example_ = std::max<int64_t>(1, dataset_.target_shape().numel());
  }
  for (size_t chunk = 0; chunk < stages_.size(); ++chunk) {
    optimizers_.push_back(make_optimizer(chunk));
  }
  executor_ = std::make_unique<pipeline::Executor>(
      std::move(chunks), *link_, topology_.pipeline_rank, placement_, *loss_, kernels_);
  executor_->set_trace(&trace_);
  std::vector<plan::Program> programs;  // every rank's: when this one's sends are released
  for (int rank = 0; rank < topology_.num_pipeline_ranks; ++rank) {
    programs.push_back(plan::make_program(
        pipeline_plan_.schedule, topology_.num_pipeline_ranks, pipe.micro_batches, rank,
        placement_.virtual_stages, pipeline_plan_.weight_grads, pipeline_plan_.weight_group));
  }
  program_ = programs.at(static_cast<size_t>(topology_.pipeline_rank));
  messages_ = plan::step_messages(programs, placement_).at(topology_.pipeline_rank);
}

std::unique_ptr<optim::Optimizer> Trainer::make_optimizer(size_t chunk) const {
  const pipeline::Stage& stage = *stages_[chunk];
  return optim::Optimizer::make(experiment_.optimizer, stage.params().num_params(),
                                experiment_.optimizer.decay_exempt
                                    ? decay_exempt_ranges(stage, plan_.tied)
                                    : std::vector<optim::ParamRange>{},
                                sharded_ ? std::optional(shard(chunk)) : std::nullopt);
}

optim::ParamRange Trainer::shard(size_t chunk) const {
  if (!sharded_) return {0, stages_[chunk]->params().num_params()};
  const std::vector<int64_t>& begins = shard_begins_[chunk];
  const auto s = static_cast<size_t>(optim::shard_index(topology_.replica, topology_.num_replicas));
  return {begins[s], begins[s + 1]};
}

std::vector<std::vector<size_t>> Trainer::bucket_shards(
    const std::vector<std::span<float>>& buckets) const {
  std::vector<std::vector<size_t>> cuts;
  for (const std::span<float> bucket : buckets) {
    size_t chunk = 0;  // the one whose gradient buffer holds the bucket
    const auto holds = [&bucket](std::span<const float> grads) {
      const std::less_equal<const float*> at_most;
      return at_most(grads.data(), bucket.data()) &&
             !at_most(grads.data() + grads.size(), bucket.data());
    };
    while (!holds(stages_[chunk]->params().grads())) ++chunk;
    const auto offset = bucket.data() - stages_[chunk]->params().grads().data();
    std::vector<size_t>& mine = cuts.emplace_back();
    for (const int64_t begin : shard_begins_[chunk]) {
      mine.push_back(static_cast<size_t>(
          std::clamp<int64_t>(begin - offset, 0, static_cast<int64_t>(bucket.size()))));
    }
  }
  return cuts;
}

void Trainer::repartition(plan::PipelinePlan plan) {
  const comm::WatchScope watch(world_, "moving layers", comm::WaitPhase::kLong);
  LayerMove move{.pipeline = &groups_.pipeline,
                 .tag = tags_.tensor(0),
                 .placement = placement_,
                 .from = {},
                 .wanted = {}};
  for (const auto& stage : pipeline_plan_.stages) move.from.push_back(stage.layers);
  // The old stages and optimizers stay alive until their state has been sent and copied.
  executor_.reset();  // holds the old stages
  const int64_t steps_taken = optimizers_[0]->steps_taken();
  std::vector<std::unique_ptr<optim::Optimizer>> old_optimizers = whole_optimizers(true);
  if (old_optimizers.empty()) old_optimizers = std::move(optimizers_);
  const std::vector<std::unique_ptr<pipeline::Stage>> old_stages = std::move(stages_);
  std::vector<checkpoint::TensorView> old_state;
  for (size_t chunk = 0; chunk < old_stages.size(); ++chunk) {
    std::ranges::move(stage_state(*old_stages[chunk], *old_optimizers[chunk], plan_.tied),
                      std::back_inserter(old_state));
  }
  pipeline_plan_ = std::move(plan);
  build_stages();
  std::vector<std::string> slots;
  for (const auto& [slot, state] : optimizers_[0]->state()) slots.push_back(slot);
  for (int rank = 0; rank < placement_.num_ranks; ++rank) {
    std::vector<std::unique_ptr<nn::Layer>> layers;  // of every chunk of the rank
    for (int chunk = 0; chunk < placement_.virtual_stages; ++chunk) {
      const plan::LayerRange range =
          pipeline_plan_.stages.at(static_cast<size_t>(placement_.stage_of(rank, chunk))).layers;
      std::ranges::move(
          model::build_layers(experiment_.model, plan_.inputs, range.begin, range.end),
          std::back_inserter(layers));
    }
    move.wanted.push_back(state_layout(layers, slots, plan_.tied));
  }
  for (const auto& optimizer : optimizers_) optimizer->set_steps_taken(steps_taken);
  std::vector<std::unique_ptr<optim::Optimizer>> whole = whole_optimizers(false);
  load_rank_state(
      chunk_states(whole),
      [&](const checkpoint::TensorDestination& into) { move_layer_state(move, old_state, into); },
      "the moved layers", plan_.tied);
  keep_shards(std::move(whole));
}

std::vector<ChunkState> Trainer::chunk_states(
    const std::vector<std::unique_ptr<optim::Optimizer>>& whole) {
  const auto& optimizers = whole.empty() ? optimizers_ : whole;
  std::vector<ChunkState> chunks;
  for (size_t chunk = 0; chunk < stages_.size(); ++chunk) {
    chunks.push_back({.stage = stages_[chunk].get(), .optimizer = optimizers[chunk].get()});
  }
  return chunks;
}

bool Trainer::shard_fits_in_grads(size_t chunk, size_t slots) const {
  const size_t num_params = stages_[chunk]->params().grads().size();
  const optim::ParamRange owned = shard(chunk);
  return slots * static_cast<size_t>(owned.end - owned.begin) <= num_params;
}

std::vector<std::unique_ptr<optim::Optimizer>> Trainer::whole_optimizers(bool gather) {
  std::vector<std::unique_ptr<optim::Optimizer>> whole;
  if (!sharded_) return whole;
  for (size_t chunk = 0; chunk < optimizers_.size(); ++chunk) {
    std::unique_ptr<optim::Optimizer>& live = optimizers_[chunk];
    const int64_t num_params = live->num_params();
    const int64_t steps_taken = live->steps_taken();
    const auto begin = static_cast<size_t>(live->owned().begin);
    const auto size = static_cast<size_t>(live->owned().end) - begin;
    // The shard's slots: parked one after the other in the gradient buffer when they fit (and
    // `live` freed), else `live`'s own.
    std::vector<std::span<float>> shard;
    for (const auto& [name, values] : live->state()) shard.push_back(values);
    if (gather && shard_fits_in_grads(chunk, shard.size())) {
      const std::span<float> grads = stages_[chunk]->params().grads();
      for (size_t slot = 0; slot < shard.size(); ++slot) {
        std::ranges::copy(shard[slot], grads.begin() + static_cast<std::ptrdiff_t>(slot * size));
        shard[slot] = grads.subspan(slot * size, size);
      }
      live.reset();
    }
    if (!gather) live.reset();  // its state is about to be read whole
    // Never stepped (it only carries state to and from files), so no decay-exempt ranges.
    auto& optimizer =
        *whole.emplace_back(optim::Optimizer::make(experiment_.optimizer, num_params));
    optimizer.set_steps_taken(steps_taken);
    if (!gather) continue;
    const auto all = optimizer.state();
    for (size_t slot = 0; slot < all.size(); ++slot) {
      std::ranges::copy(shard[slot], all[slot].second.begin() + static_cast<std::ptrdiff_t>(begin));
      shard_order_->allgatherv_in_place(all[slot].second, shard_begins_[chunk]);
    }
  }
  return whole;
}

void Trainer::keep_shards(std::vector<std::unique_ptr<optim::Optimizer>> whole) {
  for (size_t chunk = 0; chunk < whole.size(); ++chunk) {
    std::unique_ptr<optim::Optimizer>& all = whole[chunk];
    const int64_t steps_taken = all->steps_taken();
    const optim::ParamRange owned = shard(chunk);
    const auto begin = static_cast<size_t>(owned.begin);
    const auto size = static_cast<size_t>(owned.end) - begin;
    // This replica's part of each slot: parked one after the other in the gradient buffer when
    // they fit (and `all` freed before the shard's optimizer is made), else `all`'s own.
    std::vector<std::span<const float>> shard;
    for (const auto& [name, values] : all->state()) shard.push_back(values.subspan(begin, size));
    if (!optimizers_[chunk] && shard_fits_in_grads(chunk, shard.size())) {
      const std::span<float> grads = stages_[chunk]->params().grads();
      for (size_t slot = 0; slot < shard.size(); ++slot) {
        std::ranges::copy(shard[slot], grads.begin() + static_cast<std::ptrdiff_t>(slot * size));
        shard[slot] = grads.subspan(slot * size, size);
      }
      all.reset();
    }
    if (!optimizers_[chunk]) optimizers_[chunk] = make_optimizer(chunk);
    optimizers_[chunk]->set_steps_taken(steps_taken);
    const auto mine = optimizers_[chunk]->state();
    for (size_t slot = 0; slot < mine.size(); ++slot) {
      std::ranges::copy(shard[slot], mine[slot].second.begin());
    }
  }
}

pipeline::RoundPlan Trainer::round_plan(int64_t round, int64_t first_row,
                                        const std::vector<int64_t>& rows) const {
  pipeline::RoundPlan plan{.round = round,
                           .seed = experiment_.train.seed,
                           .rows = rows,
                           .first_example = {},
                           .stage_inputs = {},
                           .stage_output_grads = {},
                           .grad_scale = 1.0f};
  for (const plan::LayerRange& range : ranges_) {
    plan.stage_inputs.push_back(plan_.live_shapes(range.begin));
    plan.stage_output_grads.push_back(plan_.live_grad_shapes(range.end));
  }
  int64_t first = first_row;
  for (int64_t r : rows) {
    plan.first_example.push_back(first);
    first += r;
  }
  return plan;
}

pipeline::MicroBatchData Trainer::micro_batch_data(data::Split split,
                                                   const std::vector<int64_t>& indices,
                                                   const pipeline::RoundPlan& plan,
                                                   int64_t step) const {
  // indices: the whole round's examples; micro-batch m takes plan.rows[m] of them starting at
  // plan.first_example[m].
  auto slice = [&indices, &plan](int m) {
    const auto begin = static_cast<size_t>(plan.first_example[static_cast<size_t>(m)]);
    return std::span<const int64_t>(indices).subspan(
        begin, static_cast<size_t>(plan.rows[static_cast<size_t>(m)]));
  };
  const uint64_t seed = experiment_.train.seed;
  return {
      .inputs =
          [this, split, slice, seed, step](int m) {
            // The data inputs are the graph's first values, in the dataset's order.
            std::vector<Tensor> all = dataset_.input_tensors(split, slice(m), seed, step);
            pipeline::Bundle read;
            for (int value : graph_->live_set(0)) {
              read.push_back(std::move(all.at(static_cast<size_t>(value))));
            }
            return read;
          },
      .targets = [this, split, slice](int m) { return dataset_.targets(split, slice(m)); },
  };
}

int64_t Trainer::loss_rows(std::span<const int64_t> indices) const {
  const std::optional<int64_t> pad = dataset_.pad_target();
  if (!pad) return std::ssize(indices) * loss_rows_per_example_;
  const Tensor targets = dataset_.targets(data::Split::kTrain, indices);
  const auto padded =
      std::count(targets.data(), targets.data() + targets.numel(), static_cast<float>(*pad));
  return std::max<int64_t>(1, targets.numel() - padded);
}

StepReport Trainer::step(int64_t step) {
  const auto step_start = Clock::now();
  const auto& train = experiment_.train;
  const int num_micro_batches = experiment_.pipeline.micro_batches;
  const int64_t replica_rows = train.batch_size / topology_.num_replicas;

  for (const auto& stage : stages_) stage->zero_grads_for_step();
  layer_times_.begin_step();
  // The ranks of the first and the last stage (global stages 0 and K·v - 1).
  const bool needs_data =
      topology_.pipeline_rank == 0 || topology_.pipeline_rank == topology_.num_pipeline_ranks - 1;
  std::vector<int64_t> indices;
  if (needs_data) {
    indices = sampler_.batch(step, train.batch_size);
  }
  pipeline::RoundPlan plan = round_plan(step, topology_.replica * replica_rows,
                                        std::vector<int64_t>(static_cast<size_t>(num_micro_batches),
                                                             replica_rows / num_micro_batches));
  // The loss gradient is the mean over the mini-batch's target rows (its padded ones aside), which
  // only the last stage uses; the ranks that read data count them (zbv's rank 0 holds the last
  // stage).
  plan.grad_scale = 1.0f / static_cast<float>(needs_data ? loss_rows(indices) : 1);
  // With data parallelism, each layer's gradient allreduce starts as soon as its chunk's last
  // backward has finished that layer, and overlaps the backward of the earlier layers and the
  // remaining sends of the step.
  // Scattered, each replica sums only its shard of each bucket; the step below reads only the
  // shard's gradients when sharded.
  const bool reduce = topology_.num_replicas > 1;
  const std::vector<std::span<float>> buckets =
      reduce ? executor_->gradient_buckets() : std::vector<std::span<float>>{};
  comm::BucketedAllreduce allreduce(
      reduction_levels_, buckets,
      scattered_ ? bucket_shards(buckets) : std::vector<std::vector<size_t>>{});
  pipeline::LossTotals totals;
  const int64_t sent_before = link_->training_bytes_sent();
  {
    const kernels::WeightsFixed fixed(kernels_);  // until the optimizer update below
    totals = executor_->train_step(program_, messages_, plan,
                                   micro_batch_data(data::Split::kTrain, indices, plan, step),
                                   reduce ? &allreduce : nullptr);
  }
  layer_times_.end_step();
  const auto allreduce_start = Clock::now();
  if (reduce) test_stop_at(TestMoment::kAllreduce, step + 1);
  allreduce.finish();
  const double allreduce_s = seconds_since(allreduce_start);
  if (reduce && trace_.recording()) {
    trace_.span(log::TraceKind::kAllreduce, -1, allreduce_start, Clock::now());
  }
  tied_copies_->sum_gradients();
  std::vector<std::vector<float>> buffer_updates;  // per chunk
  for (const auto& stage : stages_) {
    buffer_updates.push_back(gather_buffer_updates(*stage, groups_.data_parallel));
  }

  // Every rank learns the step's loss, whether any gradient is non-finite and whether any rank
  // met a read fault (a shard changed under the run) before any update, in the one allreduce
  // the loss needs anyway.
  bool grads_finite = true;
  for (size_t c = 0; c < stages_.size(); ++c) {
    grads_finite = grads_finite && all_finite(part(stages_[c]->params().grads(), shard(c)));
  }
  std::vector<double> sums = {totals.sum, static_cast<double>(totals.rows),
                              grads_finite ? 0.0 : 1.0, read_fault_here()};
  const auto sync_start = Clock::now();
  {
    const log::TraceScope traced(trace_, log::TraceKind::kLossAllreduce);
    world_.allreduce_sum(std::span<double>(sums));
  }
  if (sums[3] > 0) end_on_read_fault();
  StepReport report;
  report.sync_s = seconds_since(sync_start);
  report.times = executor_->last_step_times();
  report.sent_bytes = link_->training_bytes_sent() - sent_before;
  report.allreduce_s = allreduce_s;
  report.loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  report.lr = optim::learning_rate(experiment_.optimizer, step,
                                   optim::schedule_steps(experiment_.optimizer, train.steps));
  if (sums[2] > 0 || !std::isfinite(report.loss)) {
    report.finite = false;
    report.nonfinite = describe_nonfinite(step, report.loss);
    report.step_s = seconds_since(step_start);
    return report;
  }
  const log::TraceScope traced(trace_, log::TraceKind::kOptimizer);
  if (experiment_.optimizer.clip_norm > 0) {  // the norm costs a pass over all gradients
    report.grad_norm = global_grad_norm();
    const double coefficient =
        optim::clip_coefficient(report.grad_norm, experiment_.optimizer.clip_norm);
    for (size_t c = 0; c < stages_.size(); ++c) {
      optim::scale(part(stages_[c]->params().grads(), shard(c)), coefficient);
    }
  }
  for (size_t c = 0; c < stages_.size(); ++c) {
    const std::span<float> values = stages_[c]->params().values();
    optimizers_[c]->step(values, stages_[c]->params().grads(), report.lr);
    // Each replica updated its shard: every replica gets every shard.
    if (sharded_) shard_order_->allgatherv_in_place(values, shard_begins_[c]);
    stages_[c]->apply_buffer_updates(buffer_updates[c]);
  }
  report.step_s = seconds_since(step_start);
  return report;
}

std::string Trainer::describe_nonfinite(int64_t step, double loss) const {
  // (stage, global layer) of every layer with a non-finite gradient, from every stage. The
  // replicas hold the same summed gradients, so replica 0's pipeline speaks for all; sharded,
  // each replica for the layers of its shard (a layer several shards cut is named once).
  std::vector<double> mine;
  if (topology_.replica == 0 || sharded_) {
    for (int chunk = 0; chunk < num_chunks(); ++chunk) {
      const pipeline::Stage& stage = *stages_[static_cast<size_t>(chunk)];
      for (int layer : layers_with_nonfinite(stage.params(), stage.params().grads(),
                                             shard(static_cast<size_t>(chunk)))) {
        mine.push_back(static_cast<double>(global_stage(chunk)));
        mine.push_back(static_cast<double>(layer));
      }
    }
  }
  std::vector<std::pair<double, double>> pairs;  // (stage, layer), each once
  const std::vector<double> gathered = world_.allgatherv(mine);
  for (size_t i = 0; i + 1 < gathered.size(); i += 2)
    pairs.emplace_back(gathered[i], gathered[i + 1]);
  std::ranges::sort(pairs);
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<double> all;
  for (const auto& [stage, layer] : pairs) all.insert(all.end(), {stage, layer});
  std::string text = fmt::format("step {}: ", step + 1);
  if (!std::isfinite(loss)) text += std::isnan(loss) ? "loss is nan; " : "loss is infinite; ";
  if (all.empty()) return text + "every gradient is finite";
  // In backward order (descending layer): the first one is where the fault showed up first.
  const auto num_layers = all.size() / 2;
  size_t last = 0;  // the pair of the highest layer (ranks' chunks are not in layer order)
  for (size_t i = 0; i < all.size(); i += 2) {
    if (all[i + 1] > all[last + 1]) last = i;
  }
  const int last_stage = static_cast<int>(all[last]);
  const auto last_layer = static_cast<size_t>(all[last + 1]);
  return text + fmt::format(
                    "non-finite gradients in {} layer{}, first in backward order: layer {} ({}) "
                    "on stage {}",
                    num_layers, num_layers == 1 ? "" : "s", last_layer,
                    plan_.layers[last_layer].kind, last_stage);
}

double Trainer::global_grad_norm() const {
  // Per-layer partial sums from every stage, combined in global layer order, so the norm is
  // the same for every partition; the tied copies but the first embedding's are left out, so the
  // matrix counts once. Sharded, each replica sums the norm blocks of its shards, and
  // every replica adds each layer's blocks in order (gathered in shard order), as unsharded.
  std::vector<double> mine;
  std::vector<std::pair<int, double>> per_layer_here;
  if (sharded_) {
    std::vector<double> blocks;  // (layer, sum of squares) of each block of this replica's shards
    for (size_t c = 0; c < stages_.size(); ++c) {
      const optim::ParamRange owned = shard(c);
      for (const auto& [layer, sum] : stages_[c]->params().grad_square_block_sums(
               owned.begin, owned.end, tied_copies_->uncounted(*stages_[c]))) {
        blocks.insert(blocks.end(), {static_cast<double>(layer), sum});
      }
    }
    const std::vector<double> all = shard_order_->allgatherv(blocks);
    std::map<int, double> sums;
    for (size_t i = 0; i + 1 < all.size(); i += 2) sums[static_cast<int>(all[i])] += all[i + 1];
    per_layer_here.assign(sums.begin(), sums.end());
  } else {
    for (const auto& stage : stages_) {
      for (const auto& entry :
           stage->params().grad_square_sums_per_layer(tied_copies_->uncounted(*stage))) {
        per_layer_here.push_back(entry);
      }
    }
  }
  for (const auto& [layer, square_sum] : per_layer_here) {
    mine.push_back(static_cast<double>(layer));
    mine.push_back(square_sum);
  }
  std::vector<double> all = groups_.pipeline.allgatherv(mine);
  std::vector<std::pair<int, double>> per_layer;
  for (size_t i = 0; i + 1 < all.size(); i += 2) {
    per_layer.emplace_back(static_cast<int>(all[i]), all[i + 1]);
  }
  return optim::global_norm(per_layer);
}

double Trainer::read_fault_here() const { return dataset_.read_fault().empty() ? 0.0 : 1.0; }

void Trainer::end_on_read_fault() const {
  comm::agree(world_, [this] {
    const std::string fault = dataset_.read_fault();
    if (!fault.empty()) throw InputError(fault);
  });
}

pipeline::LossTotals Trainer::sum_over_world(const pipeline::LossTotals& mine) const {
  std::vector<double> values = {mine.sum, static_cast<double>(mine.rows),
                                static_cast<double>(mine.correct), read_fault_here()};
  world_.allreduce_sum(std::span<double>(values));
  if (values[3] > 0) end_on_read_fault();
  return {.sum = values[0],
          .rows = static_cast<int64_t>(values[1]),
          .correct = static_cast<int64_t>(values[2])};
}

EvalBatches eval_batches(const TrainConfig& train, int64_t size) {
  EvalBatches batches;
  batches.batch = train.eval_batch_size > 0 ? train.eval_batch_size : train.batch_size;
  batches.count = (size + batches.batch - 1) / batches.batch;
  if (train.eval_batches > 0) batches.count = std::min(batches.count, train.eval_batches);
  batches.examples = std::min(size, batches.count * batches.batch);
  return batches;
}

EvalReport Trainer::evaluate(int64_t step, data::Split split, EvalExtras extras) {
  const comm::WatchScope watch(world_, "evaluation", comm::WaitPhase::kLong);
  const int64_t size = dataset_.size(split);
  const EvalBatches batches = eval_batches(experiment_.train, size);
  const int64_t batch = batches.batch;
  const int64_t num_batches = batches.count;
  pipeline::LossTotals totals;
  std::vector<double> mine;    // per example of this rank's last stage: index, loss sum, rows
  std::vector<float> outputs;  // this rank's last stage's, batch after batch
  std::vector<double> output_blocks;  // per batch in `outputs`: its first example, its rows
  const kernels::WeightsFixed fixed(kernels_);
  // Replicas take turns: batch j is evaluated by replica j % D.
  for (int64_t j = topology_.replica; j < num_batches; j += topology_.num_replicas) {
    const int64_t first = j * batch;
    const int64_t rows = std::min(batch, size - first);
    const int64_t parts = std::min<int64_t>(experiment_.pipeline.micro_batches, rows);
    std::vector<int64_t> micro_rows;
    for (int64_t m = 0; m < parts; ++m) micro_rows.push_back(rows / parts + (m < rows % parts));
    pipeline::RoundPlan plan = round_plan(j, 0, micro_rows);
    std::vector<int64_t> indices(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) indices[static_cast<size_t>(i)] = first + i;
    std::vector<nn::LossOutput> examples;
    const size_t outputs_before = outputs.size();
    pipeline::LossTotals part = executor_->evaluate(
        plan, micro_batch_data(split, indices, plan, step),
        extras.example_losses ? &examples : nullptr, extras.outputs ? &outputs : nullptr);
    if (outputs.size() > outputs_before) {
      output_blocks.insert(output_blocks.end(),
                           {static_cast<double>(first), static_cast<double>(rows)});
    }
    for (size_t i = 0; i < examples.size(); ++i) {
      mine.insert(mine.end(), {static_cast<double>(first + static_cast<int64_t>(i)),
                               examples[i].sum, static_cast<double>(examples[i].rows)});
    }
    totals.sum += part.sum;
    totals.rows += part.rows;
    totals.correct += part.correct;
  }
  pipeline::LossTotals sum = sum_over_world(totals);
  EvalReport report;
  if (extras.outputs) {
    const std::vector<double> blocks = world_.allgatherv(output_blocks);
    report.outputs = in_example_order(world_.gatherv(outputs, 0), blocks);
  }
  if (extras.example_losses) {
    const std::vector<double> all = world_.allgatherv(mine);
    report.example_losses.resize(all.size() / 3);
    for (size_t i = 0; i + 3 <= all.size(); i += 3) {
      report.example_losses.at(static_cast<size_t>(all[i])) = {
          .sum = all[i + 1], .rows = static_cast<int64_t>(all[i + 2])};
    }
  }
  report.rows = sum.rows;
  report.examples = batches.examples;
  if (sum.rows > 0) report.loss = sum.sum / static_cast<double>(sum.rows);
  if (loss_->classifies()) {  // a regression loss counts no correct rows: no accuracy
    report.accuracy =
        sum.rows > 0 ? static_cast<double>(sum.correct) / static_cast<double>(sum.rows) : 0.0;
  }
  return report;
}

}  // namespace mpipe::train
