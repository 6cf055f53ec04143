// Tied copies: the two copies of a tied matrix (the embedding's token matrix and the output
// linear's weight, model/tied_weights.h) kept equal, on one rank or on two.
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "core/shape.h"
#include "model/layer_spec.h"
#include "model/model_builder.h"
#include "model/partition.h"
#include "model/tied_weights.h"
#include "pipeline/placement.h"
#include "pipeline/stage.h"

namespace mpipe::train {

// Each use keeps its own copy of the matrix. Both start from the embedding's draw; after the
// data-parallel allreduce each copy's gradient becomes the sum of the two uses' gradients (a + b:
// one addition, exact in either order, so it is the same on both ranks and for every K, v and D);
// both copies then take identical optimizer steps and stay equal.
class TiedCopies {
 public:
  // Collective over `pipeline` (this replica's pipeline group, its rank the pipeline rank) when
  // the tie spans two ranks: they get a communicator of their own (`pipeline` may be null when
  // both layers are on one rank, in one chunk or in two). `ranges` are every global stage's
  // layers, placed by `placement`; `chunks` are this rank's stages (chunk c is global stage
  // placement.stage_of(rank, c)), bound to their parameters.
  TiedCopies(std::optional<model::TiedWeights> tied, const std::vector<model::LayerRange>& ranges,
             const pipeline::Placement& placement, int rank, const comm::Communicator* pipeline,
             const std::vector<pipeline::Stage*>& chunks);

  // Overwrites the head's copy with the embedding's initial values (same seed, layer and
  // parameter index as the embedding's own draw). `spec` and `input` describe the model.
  void initialize(uint64_t seed, const model::ModelSpec& spec, const model::ModelInputs& inputs);
  // Replaces each held copy's gradient by the sum of both uses' gradients; the two ranks
  // exchange theirs in fixed-size chunks (under the watchdog's deadlines). Call it after the
  // data-parallel allreduce and before the gradients are checked, clipped or applied.
  void sum_gradients();
  // Counts the matrix once in a gradient norm: in `per_layer` ((global layer, sum of squares of
  // its gradients), as ParamBuffer::grad_square_sums_per_layer gives), the head's entry keeps
  // only its other parameters (its bias).
  void count_once(std::vector<std::pair<int, double>>& per_layer) const;

 private:
  std::optional<model::TiedWeights> tied_;
  const pipeline::Stage* head_stage_ = nullptr;  // the chunk holding the head, if any
  std::span<float> embedding_grad_, head_grad_;  // empty when this rank holds not that layer
  std::span<float> head_values_;
  std::optional<comm::Communicator> pair_;  // the two ranks, when they differ (rank 0: embedding)
};

}  // namespace mpipe::train
