// Trainer: one rank's part of a synchronous pipeline-parallel training run (its v chunks, each a
// Stage). Trainer::step reads like the algorithm: zero grads → run the rank's program →
// allreduce → clip → optimizer step.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/tag_space.h"
#include "comm/topology.h"
#include "config/experiment.h"
#include "data/dataset.h"
#include "data/sampler.h"
#include "kernels/context.h"
#include "log/trace_recorder.h"
#include "model/model_builder.h"
#include "nn/loss.h"
#include "optim/optimizer.h"
#include "pipeline/executor.h"
#include "pipeline/link.h"
#include "pipeline/stage.h"
#include "plan/op.h"
#include "plan/partition.h"
#include "plan/placement.h"
#include "plan/planner.h"
#include "train/pipeline_plan.h"
#include "train/stage_tensors.h"
#include "train/tied_copies.h"

namespace mpipe::train {

// What one step or evaluation produced, identical on every rank.
struct StepReport {
  double loss = 0.0;  // mean over the mini-batch
  double lr = 0.0;
  double grad_norm = 0.0;  // before clipping (computed only when clipping is on)
  // False when the loss or a gradient was NaN or infinite: then no update was applied and
  // `nonfinite` says where ("step 17: loss nan; non-finite gradients in 3 layers ...").
  bool finite = true;
  std::string nonfinite;
  // This rank's share of the step's wall time (log.level: debug prints it per rank).
  pipeline::StepTimes times;
  double allreduce_s = 0.0;  // waiting for the data-parallel gradient allreduce
  double sync_s = 0.0;  // the step's world allreduce (loss, finiteness): waiting for the slowest
  double step_s = 0.0;  // the whole step
  // Bytes of the activations and gradients this rank sent its neighbours (pipeline::Link).
  int64_t sent_bytes = 0;
};

struct ExampleLoss {
  double sum = 0.0;
  int64_t rows = 0;
};

struct EvalReport {
  double loss = 0.0;               // mean over all evaluated rows
  std::optional<double> accuracy;  // a fraction; a classifying loss's only (nn::Loss::classifies)
  int64_t rows = 0;
  int64_t examples = 0;  // the evaluated examples: [0, examples) of the split
  // When asked for: each evaluated example's own loss, in example order (its sum over its rows,
  // tokens for sequences, and their count).
  std::vector<ExampleLoss> example_losses;
  // When asked for, on world rank 0 alone: each evaluated example's model output (what the loss
  // reads: logits), in example order, row-major [examples, ...the model's output shape].
  std::vector<float> outputs;
};

// What an evaluation gathers beside its totals (`mpipe eval --losses`, `--logits`).
struct EvalExtras {
  bool example_losses = false;  // EvalReport::example_losses, on every rank
  bool outputs = false;         // EvalReport::outputs, on world rank 0
};

// How an evaluation cuts a split of `size` examples: `batch` examples a batch
// (train.eval_batch_size, else train.batch_size), `count` batches (at most train.eval_batches),
// over the examples [0, examples).
struct EvalBatches {
  int64_t batch = 0;
  int64_t count = 0;
  int64_t examples = 0;
};
EvalBatches eval_batches(const TrainConfig& train, int64_t size);

// K and D from the config, resolving `auto` (0) from the world size.
comm::Topology resolve_topology(const plan::PipelineConfig& config, int world_rank, int world_size);

class Trainer {
 public:
  // Collective over `world`: splits it into pipeline and data-parallel groups as `plan` (the
  // preflight's, for this world) lays them out, builds this rank's stages (one per chunk:
  // pipeline.virtual_stages) and initializes their weights from the seed.
  Trainer(const config::Experiment& experiment, RunPlan plan, const comm::Communicator& world,
          kernels::KernelContext& kernels, const data::Dataset& dataset);

  StepReport step(int64_t step);
  // The model on `split` (the held-out one unless asked), train.eval_batch_size examples a batch,
  // at most train.eval_batches batches, in example order; with what `extras` asks for.
  EvalReport evaluate(int64_t step, data::Split split = data::Split::kTest, EvalExtras extras = {});

  // Collective over the world, at a step boundary: runs `plan` (the same partition on every
  // rank; same schedule, recompute mode and chunks per rank) from now on. Each chunk's stage is
  // rebuilt for its new layer range, and the layers that change rank bring their weights,
  // buffers and optimizer state from the rank that held them (train/layer_move.h; gradients are
  // zero between steps), in every replica alike, so the run continues bit for bit as it would
  // have.
  void repartition(plan::PipelinePlan plan);

  const comm::Topology& topology() const { return topology_; }
  const comm::Communicator& world() const { return world_; }
  // The run's kernels (its precision and primitive caches).
  kernels::KernelContext& kernels() { return kernels_; }
  const comm::Groups& groups() const { return groups_; }
  const model::ModelPlan& plan() const { return plan_; }
  // The output linear that shares the embedding's matrix, if any (model/tied_weights.h).
  const std::optional<model::TiedWeights>& tied() const { return plan_.tied; }
  // The tags of this run's point-to-point messages (train/message_tags.h).
  const comm::TagSpace& tags() const { return tags_; }
  // Where this rank's chunks sit among the K·v stages (the schedule's placement: chunk c is
  // global stage rank + c·K, or under zbv the V of pipeline/placement.h).
  const plan::Placement& placement() const { return placement_; }
  int num_chunks() const { return static_cast<int>(stages_.size()); }
  int global_stage(int chunk) const { return placement_.stage_of(topology_.pipeline_rank, chunk); }
  const plan::LayerRange& layer_range(int chunk) const {
    return ranges_.at(static_cast<size_t>(chunk));
  }
  // The partition and the predicted time and memory of every stage (pipeline/planner.h).
  const plan::PipelinePlan& pipeline_plan() const { return pipeline_plan_; }
  pipeline::Stage& stage(int chunk) { return *stages_.at(static_cast<size_t>(chunk)); }
  // Each chunk's optimizer runs over that stage's parameter buffer; all take the same steps.
  optim::Optimizer& optimizer(int chunk) { return *optimizers_.at(static_cast<size_t>(chunk)); }
  // Every chunk's stage and optimizer, in chunk order (what a checkpoint restores): the live
  // optimizers, or `whole`'s (whole_optimizers) when given.
  std::vector<ChunkState> chunk_states(
      const std::vector<std::unique_ptr<optim::Optimizer>>& whole = {});
  // Whether each replica holds only its shard of the optimizer state
  // (optimizer.shard_across_replicas with more than one replica).
  bool sharded() const { return sharded_; }
  // The data-parallel group in shard order (rank s holds shard s, optim::shard_index; replica 0
  // is rank 0): what the shards are gathered over.
  const comm::Communicator& shard_order() const {
    return shard_order_ ? *shard_order_ : groups_.data_parallel;
  }
  // When sharded, each chunk's optimizer with its whole state, for a resume (files hold whole
  // tensors) or a layer move: gathered from every replica's shard when `gather`
  // (collective over the data-parallel group), else zeroed to be read into. Between steps and
  // until keep_shards, the live optimizers are set aside: when its shard's state fits in the
  // chunk's gradient buffer (free between steps) it waits there and the optimizer is freed, so
  // the whole state costs no more than an unsharded run's. Empty when not sharded: the live
  // optimizers are whole.
  std::vector<std::unique_ptr<optim::Optimizer>> whole_optimizers(bool gather);
  // After whole_optimizers: the live optimizers again, holding this replica's shard of `whole`'s
  // state (freed on the way, before the shards are allocated where the gradient buffer holds it).
  void keep_shards(std::vector<std::unique_ptr<optim::Optimizer>> whole);
  // This rank's timeline of the traced steps (train/run_trace.h switches it on and off).
  log::TraceRecorder& trace() { return trace_; }
  // This rank's per-layer times of the training steps (pipeline.balance: measured).
  pipeline::LayerTimes& layer_times() { return layer_times_; }

 private:
  // Builds this rank's stages of pipeline_plan_ (ranges_), their optimizers and what runs them,
  // the weights initialized from the seed.
  void build_stages();
  // The optimizer of chunk `chunk`'s parameters, state zeroed: of this replica's shard when
  // sharded.
  std::unique_ptr<optim::Optimizer> make_optimizer(size_t chunk) const;
  // This replica's shard of chunk `chunk`'s parameters: all of them when not sharded.
  optim::ParamRange shard(size_t chunk) const;
  // Each data-parallel bucket cut into the shards of its chunk (comm::BucketedAllreduce's
  // scattered cuts: per bucket its shard begins in shard order, relative to the bucket).
  std::vector<std::vector<size_t>> bucket_shards(
      const std::vector<std::span<float>>& buckets) const;
  // Whether `slots` floats per parameter of chunk `chunk`'s shard fit in its gradient buffer.
  bool shard_fits_in_grads(size_t chunk, size_t slots) const;
  pipeline::RoundPlan round_plan(int64_t round, int64_t first_row,
                                 const std::vector<int64_t>& rows) const;
  pipeline::MicroBatchData micro_batch_data(data::Split split, const std::vector<int64_t>& indices,
                                            const pipeline::RoundPlan& plan, int64_t step) const;
  double global_grad_norm() const;
  // Sums [loss sum, rows, correct] of the last stages over the world; ends the run as
  // end_on_read_fault does when any rank met a read fault.
  pipeline::LossTotals sum_over_world(const pipeline::LossTotals& mine) const;
  // 1 when this rank's reads of the data met a fault (Dataset::read_fault), else 0: summed over
  // the world with a step's or an evaluation's totals.
  double read_fault_here() const;
  // Collective, once the world's sum says a rank met a read fault: every rank throws an
  // AgreedError with the lowest such rank's fault (an InputError's exit code), before the step
  // updates anything.
  void end_on_read_fault() const;
  // Collective: which layers of the model have non-finite gradients, said in one line.
  std::string describe_nonfinite(int64_t step, double loss) const;
  // The rows the loss counts in the examples `indices` of the training split: each example's
  // target rows, less its padded ones (Dataset::pad_target); at least 1.
  int64_t loss_rows(std::span<const int64_t> indices) const;

  const config::Experiment& experiment_;
  const comm::Communicator& world_;
  kernels::KernelContext& kernels_;
  const data::Dataset& dataset_;
  comm::Topology topology_;
  comm::Groups groups_;
  model::ModelPlan plan_;
  std::shared_ptr<const model::ModelGraph> graph_;  // plan_'s, which the stages share
  comm::TagSpace tags_;
  plan::PipelinePlan pipeline_plan_;
  plan::Placement placement_;
  std::vector<plan::LayerRange> ranges_;  // per chunk
  std::vector<std::unique_ptr<pipeline::Stage>> stages_;
  std::unique_ptr<nn::Loss> loss_;
  std::vector<std::unique_ptr<optim::Optimizer>> optimizers_;
  bool sharded_ = false;  // optimizers_ hold this replica's shard (optim/replica_shard.h)
  // Sharded over a power of two of replicas: the gradient is reduce-scattered over tree_levels_
  // (each replica sums its shard alone, the tied copies theirs: TiedCopies) instead of allreduced.
  bool scattered_ = false;
  std::optional<comm::Communicator> shard_order_;  // when sharded (shard_order())
  // Per chunk when sharded: its shard begins in shard order (optim::shard_begins over its
  // parameters' norm blocks).
  std::vector<std::vector<int64_t>> shard_begins_;
  log::TraceRecorder trace_;          // before the link and the executor, which record into it
  pipeline::LayerTimes layer_times_;  // before the stage, which records into it
  std::unique_ptr<pipeline::Link> link_;
  std::unique_ptr<pipeline::Executor> executor_;
  std::unique_ptr<TiedCopies> tied_copies_;  // of every chunk
  plan::Program program_;
  plan::RankMessages messages_;  // plan::step_messages's: when program_ posts and releases
  // What the data-parallel sum runs over: the group, or under weight_grads: tree with 2^k > 2
  // replicas, or scattered, the levels of a pairwise tree (comm::tree_levels), so that the sum
  // is the tree's.
  std::vector<comm::Communicator> tree_levels_;
  std::vector<const comm::Communicator*> reduction_levels_;
  int64_t loss_rows_per_example_ = 1;
  data::EpochSampler sampler_;  // the order of training examples, cached per epoch
};

}  // namespace mpipe::train
