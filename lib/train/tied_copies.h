// Tied copies: the copies of a tied matrix (the first embedding's token matrix, later embeddings'
// and output linears' copies of it, model/tied_weights.h) kept equal, on one rank or on several.
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "core/shape.h"
#include "model/layer_spec.h"
#include "model/model_builder.h"
#include "model/tied_weights.h"
#include "pipeline/stage.h"
#include "plan/partition.h"
#include "plan/placement.h"

namespace mpipe::train {

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
  // placement.stage_of(rank, c)), bound to their parameters.
  TiedCopies(std::optional<model::TiedWeights> tied, const std::vector<plan::LayerRange>& ranges,
             const plan::Placement& placement, int rank, const comm::Communicator* pipeline,
             const std::vector<pipeline::Stage*>& chunks);

  // Overwrites each copy this rank holds with the first embedding's initial values (same seed,
  // layer and parameter index as the embedding's own draw). `spec` and `inputs` describe the model.
  void initialize(uint64_t seed, const model::ModelSpec& spec, const model::ModelInputs& inputs);
  // Replaces each held copy's gradient by the sum of every use's gradient in use order; the ranks
  // exchange theirs in fixed-size chunks (under the watchdog's deadlines). Call it after the
  // data-parallel allreduce and before the gradients are checked, clipped or applied.
  void sum_gradients();
  // Counts the matrix once in a gradient norm: in `per_layer` ((global layer, sum of squares of
  // its gradients), as ParamBuffer::grad_square_sums_per_layer gives), each copy's layer keeps
  // only its other parameters (a head's bias, an embedding's positions).
  void count_once(std::vector<std::pair<int, double>>& per_layer) const;

 private:
  struct Held {      // a use this rank holds
    size_t use = 0;  // its index in tied_->uses()
    const pipeline::Stage* stage = nullptr;
    std::span<float> grad, values;
  };
  std::optional<model::TiedWeights> tied_;
  std::vector<model::TiedUse> uses_;
  std::vector<Held> held_;                   // in use order
  std::vector<int> use_rank_;                // each use's rank in group_
  std::optional<comm::Communicator> group_;  // the ranks holding a use, when they are several
};

}  // namespace mpipe::train
