// Tied copies: the copies of a tied matrix (the first embedding's token matrix, later embeddings'
// and output linears' copies of it, model/tied_weights.h) kept equal, on one rank or on several.
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/tag_space.h"
#include "core/shape.h"
#include "model/layer_spec.h"
#include "model/model_builder.h"
#include "model/tied_weights.h"
#include "nn/param_buffer.h"
#include "pipeline/stage.h"
#include "plan/partition.h"
#include "plan/placement.h"
#include "train/tied_shard_plan.h"

namespace mpipe::train {

// The replicas when each holds only its shard of every stage's reduced gradient (a reduce-scatter:
// optimizer.shard_across_replicas with a power of two of them): the tied copies are then summed on
// the shards.
struct ReplicaShards {
  const comm::Communicator* world = nullptr;  // every rank: replica r's pipeline rank p is r·K + p
  int replica = 0;
  int replicas = 1;
  int pipeline_ranks = 1;                // K
  const comm::TagSpace* tags = nullptr;  // with tied_uses: the uses of the tie
};

// Each use keeps its own copy of the matrix. All start from the first embedding's draw; after the
// data-parallel allreduce each copy's gradient becomes the sum of every use's gradient, added in
// use order (global layer order: ((g0 + g1) + g2) + ...), the same on every rank and for every K,
// v and D; all copies then take identical optimizer steps and stay equal.
class TiedCopies {
 public:
  // Collective over `pipeline` (this replica's pipeline group, its rank the pipeline rank) when
  // the uses span several ranks: those get a communicator of their own (`pipeline` may be null
  // when every use is on one rank, in one chunk or in several). `ranges` are every global stage's
  // layers, placed by `placement`; `chunks` are this rank's stages (chunk c is global stage
  // placement.stage_of(rank, c)), bound to their parameters. With `shards` the gradients are
  // summed on the shards (sum_gradients), and the copies' places are gathered over `pipeline`
  // (collective) when the uses span several ranks.
  TiedCopies(std::optional<model::TiedWeights> tied, const std::vector<plan::LayerRange>& ranges,
             const plan::Placement& placement, int rank, const comm::Communicator* pipeline,
             const std::vector<pipeline::Stage*>& chunks,
             std::optional<ReplicaShards> shards = std::nullopt);

  // Overwrites each copy this rank holds with the first embedding's initial values (same seed,
  // layer and parameter index as the embedding's own draw). `spec` and `inputs` describe the model.
  void initialize(uint64_t seed, const model::ModelSpec& spec, const model::ModelInputs& inputs);
  // Replaces each held copy's gradient by the sum of every use's gradient in use order; the ranks
  // exchange theirs in fixed-size chunks (under the watchdog's deadlines). Call it after the
  // data-parallel allreduce and before the gradients are checked, clipped or applied. With
  // shards, after the reduce-scatter: only the part of each held copy that this replica's shard
  // holds is summed (and read: the rest holds partial sums), each element from the shards that
  // hold it on every use's rank (tied_shard_transfers), so its bits are those of the sum of the
  // whole allreduced copies.
  void sum_gradients();
  // Where a gradient norm leaves out this rank's copies in `stage` (one of the chunks), so that
  // it counts the matrix once (the first embedding's): [begin, end) of its gradient buffer, in
  // ascending order (ParamBuffer::grad_square_block_sums' `uncounted`).
  std::vector<nn::ParamBuffer::Elements> uncounted(const pipeline::Stage& stage) const;

 private:
  // sum_gradients with shards.
  void sum_on_shards();

  struct Held {      // a use this rank holds
    size_t use = 0;  // its index in tied_->uses()
    const pipeline::Stage* stage = nullptr;
    std::span<float> grad, values;
  };
  std::optional<model::TiedWeights> tied_;
  int rank_ = 0;  // this rank's pipeline rank
  std::vector<model::TiedUse> uses_;
  std::vector<Held> held_;                   // in use order
  std::vector<int> use_rank_;                // each use's rank in group_
  std::optional<comm::Communicator> group_;  // the ranks holding a use, when they are several
  std::optional<ReplicaShards> shards_;
  std::vector<TiedCopyPlace> places_;    // with shards: every use's, in use order
  std::vector<TiedTransfer> transfers_;  // with shards: tied_shard_transfers of places_
};

}  // namespace mpipe::train
