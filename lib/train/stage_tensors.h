// Stage tensors: a stage's weights, buffers and optimizer state as named tensors whose names
// depend only on global layer indices ("layers.3.weight", "optim.exp_avg.layers.3.weight"),
// so files written by a run with K stages load into a run with any other K.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/safetensors.h"
#include "model/tied_weights.h"
#include "nn/layer.h"
#include "optim/optimizer.h"
#include "pipeline/stage.h"

namespace mpipe::train {

// One tensor of the model's weights: "layers.<global layer>.<param or buffer name>".
struct WeightSlot {
  int global_layer;
  checkpoint::TensorInfo tensor;
};

// Every function below takes the model's tie (model/tied_weights.h): files hold a tied matrix
// once, under the first embedding's name ("layers.0.token"); each copy (a head's
// "layers.5.weight", a later embedding's "layers.3.token", and their optimizer state) is left out
// when writing and restored from the embedding's tensors.

// The weight tensors of `layers` in a fixed order: per layer, its parameters then its buffers.
std::vector<WeightSlot> weight_layout(const std::vector<std::unique_ptr<nn::Layer>>& layers,
                                      const std::optional<model::TiedWeights>& tied);

// The stage's weights in weight_layout order, as views into its parameters and buffers.
std::vector<std::span<const float>> weight_values(const pipeline::Stage& stage,
                                                  const std::optional<model::TiedWeights>& tied);

// Weights and optimizer state of the stage, for its checkpoint shard: views into the live
// parameters, buffers and optimizer state (valid until they change), so writing a shard adds no
// copy of the state to the stage's memory.
std::vector<checkpoint::TensorView> stage_state(const pipeline::Stage& stage,
                                                optim::Optimizer& optimizer,
                                                const std::optional<model::TiedWeights>& tied);
// A stage_state tensor as this replica holds it. Under optimizer.shard_across_replicas (an
// optimizer made with `owned`, optim/replica_shard.h) an optimizer-state tensor is `sharded`: its
// values here are the part of it inside the optimizer's owned() parameters (none, some or all of
// it), and the replicas' parts in shard order (Trainer::shard_order) make it whole. Every other
// tensor is whole.
struct HeldTensor {
  checkpoint::TensorView view;
  bool sharded = false;
};

// stage_state's tensors, in its order, as this replica holds them (see HeldTensor): every
// optimizer-state tensor `sharded` when `sharded` (Trainer::sharded), also where this replica's
// shard holds all of it or none (a small buffer's cuts may give one replica everything), so every
// replica agrees on what is gathered.
std::vector<HeldTensor> held_stage_state(const pipeline::Stage& stage, optim::Optimizer& optimizer,
                                         const std::optional<model::TiedWeights>& tied,
                                         bool sharded);

// Every tensor load_stage_state restores into a stage holding `layers` under an optimizer with
// the state slots `optimizer_slots` ("exp_avg", ...), by its name in files, each name once (a
// tied copy under the embedding's name), in a fixed order: a stage can say what another needs
// without building it.
std::vector<checkpoint::TensorInfo> state_layout(
    const std::vector<std::unique_ptr<nn::Layer>>& layers,
    const std::vector<std::string>& optimizer_slots, const std::optional<model::TiedWeights>& tied);

// What a restore checks of the tensors a file offers (the checks of a resume, which export makes
// too): every tensor the model needs, by its name in files, is found with the model's shape;
// tensors it does not need are passed over.
class NeededTensors {
 public:
  explicit NeededTensors(std::string source) : source_(std::move(source)) {}
  // `name` is needed with `shape` (again, for a tied matrix two chunks hold: the first counts).
  void need(const std::string& name, const Shape& shape);
  // Whether the file's tensor `name` is needed, now found. Throws InputError "<source>: tensor
  // layers.3.weight has shape [64, 48], the model needs [48, 64]".
  bool offer(const std::string& name, const Shape& shape);
  // Throws InputError naming `source` when `shape` is not `needed`.
  void check_shape(const std::string& name, const Shape& shape, const Shape& needed) const;
  // After the file: throws InputError "<source>: tensor layers.3.weight is missing" for the first
  // needed tensor (in the order needed) not found.
  void finish() const;

 private:
  std::string source_;
  std::vector<std::string> order_;
  std::map<std::string, std::pair<Shape, bool>> needed_;  // name -> shape, found
};

// The global layer a state tensor belongs to: N of "layers.N.<name>" or
// "optim.<slot>.layers.N.<name>".
int layer_of_state_tensor(const std::string& name);

// Restores the stage's weights (params and buffers) from named tensors, e.g. exported weights.
// Throws InputError naming `source` when a tensor is missing or has another shape, or when a
// tied copy's own tensor is present and differs from the embedding's.
void load_stage_weights(pipeline::Stage& stage, const std::vector<checkpoint::NamedTensor>& tensors,
                        const std::string& source, const std::optional<model::TiedWeights>& tied);
// Restores the stage's weights (params and buffers) from a file whose tensors `read` offers to the
// destination it is given (checkpoint::read_safetensors_into), straight into place, except those
// `keep` names (by their names in files), which keep their values. Throws InputError naming
// `source` when a tensor is missing or has another shape.
void load_stage_weights(pipeline::Stage& stage,
                        const std::function<void(const checkpoint::TensorDestination&)>& read,
                        const std::string& source,
                        const std::function<bool(const std::string&)>& keep,
                        const std::optional<model::TiedWeights>& tied);
// One chunk of a rank: a stage and the optimizer of its parameters.
struct ChunkState {
  pipeline::Stage* stage;
  optim::Optimizer* optimizer;
};

// Restores what stage_state wrote into every chunk of a rank, from any partition's shards, in one
// read: `read` offers every tensor of the checkpoint to the destination it is given
// (CheckpointStore::read_into), which takes the chunks' own straight into their parameters,
// buffers and optimizer state, so no copy of the state is held. A tensor two chunks hold (the
// embedding and a tied copy on one rank) is read once and copied. Throws InputError
// naming `source` when a tensor is missing or has another shape.
void load_rank_state(const std::vector<ChunkState>& chunks,
                     const std::function<void(const checkpoint::TensorDestination&)>& read,
                     const std::string& source, const std::optional<model::TiedWeights>& tied);

}  // namespace mpipe::train
