// Memory model: the predicted peak bytes of one pipeline stage (a contiguous layer range) from
// the layers' costs, the micro-batch size, the optimizer and how the schedule and recompute mode
// hold micro-batches at the stage's peak. Pure; O(1) per query, so a partitioner can ask often.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "plan/allocator_model.h"
#include "plan/cost_model.h"
#include "plan/stage_values.h"

namespace mpipe::plan {

// How a stage holds micro-batches at its peak (the pipeline derives it from the schedule and the
// recompute mode: see pipeline/planner.h).
struct StashProfile {
  int inputs = 0;          // micro-batches kept as their stage input only (recomputed later)
  int full = 0;            // micro-batches kept with everything their layers saved
  bool recompute = false;  // one micro-batch's recompute (all its internals) is alive at the peak
  int loss_grads = 0;      // last stage: loss gradients waiting for their backward
  // Per-layer recompute (pipeline recompute: per_layer): micro-batches kept as every layer's
  // input, and whether one micro-batch is in its per-layer backward at the peak (layer i
  // recomputed: the inputs of the layers before i, what layer i saved and its temporaries are
  // alive; the moment's `transient` is then part of the workspace).
  int layer_inputs = 0;
  bool layer_recompute = false;
  // Whether the peak is in a backward (else in a forward).
  bool backward = true;
  // The last stage right after a forward, computing that micro-batch's loss: no layer runs, the
  // stage's output is alive beside what the loss holds (LayerCost::loss_tensor_bytes: its
  // gradient and the targets).
  bool loss = false;
  // A forward whose layers' saved tensors are dropped one by one (a recomputed micro-batch's
  // first forward): the largest layer's saved tensors add to its temporaries.
  bool discarding = false;
  // Messages at the peak (plan::rank_moments, from the op list): receive buffers posted and
  // not consumed, of activations from the previous stage and of gradients from the next one, and
  // the tensors of sends not yet retired, of activations and of input gradients.
  int posted_activations = 0, posted_gradients = 0;
  int sent_activations = 0, sent_gradients = 0;
  // Batched or grouped weight gradients: the micro-batches whose weight-gradient operands the
  // layers hold (batched: every one of the step's from its first backward on; grouped: those of
  // the group being copied; 0 before, or when accumulating).
  int weight_grad_micro_batches = 0;
  // In the step's (a group's) first backward, each layer with operands allocates them (for every
  // micro-batch of the step or group) in its own backward, last layer first: the peak is at the
  // layer where the operands so far and its temporaries are largest. With split backwards the
  // first W op allocates them instead (weight_op).
  bool weight_grad_operands_filling = false;
  // Zero-bubble schedules: micro-batches past their input-gradient op (I) whose weight-gradient
  // op (W) has not run, each holding what every splitting layer keeps for its W (its output
  // gradient and LayerCost::weight_work_tensor_bytes).
  int pending_weight_micro_batches = 0;
  // Zero-bubble schedules, at a backward: the micro-batch in its I, last layer first, keeps each
  // splitting layer's output gradient and W's tensors in place of what it saved, from that
  // layer's I on (MemoryModel::splitting_backward walks the layers).
  bool splitting_backward = false;
  // Zero-bubble schedules, a W op of a chunk that batches or groups its weight gradients
  // (plan::rank_moments): no layer's temporaries (a W op runs its layers' weight-gradient kernels
  // in place, and a deferring layer only copies). Last layer first, each layer that splits its
  // backward copies the micro-batch's operands into its group's (nn::Linear) and then frees the
  // micro-batch's W work of that layer (Stage::backward_weight). In a group's first W
  // (weight_grad_operands_filling) each layer allocates its operands for every micro-batch of the
  // group before its copy, so the peak is at the layer where the operands so far and the W work
  // not yet freed are largest (MemoryModel::weight_op); in a later W they are all there.
  // pending_weight_micro_batches counts the other micro-batches' W work, not this one's.
  bool weight_op = false;
  // A communication op, where no layer runs: a received message beside the tensors it is unpacked
  // into (pipeline::unpack), or the tensors to send beside the message they are packed into
  // (pipeline::pack). A chain's one tensor moves into and out of its message: only it is there.
  enum class Copy { kNone, kActivationIn, kActivationOut, kGradientIn, kGradientOut };
  Copy copy = Copy::kNone;
  // An evaluation's forward (Stage::evaluate): the input, counted in `inputs`, is read in place by
  // the stage's first layer, and no layer keeps what it is handed, so each holds its main input
  // until it ends.
  bool evaluating = false;
  // With virtual stages: another chunk of the rank runs an op, so this one (a stage of that rank)
  // holds no temporaries, only what it keeps between its ops and its messages
  // (plan::rank_moments).
  bool idle = false;
  // weight_grads: tree: the older partial sums of the stage's gradients held aside (an upper
  // bound: plan::GradientTree::max_waiting).
  int gradient_partials = 0;
};

// Predicted peak bytes of one stage, by kind.
struct StageMemory {
  double params = 0.0;
  double grads = 0.0;
  double gradient_partials = 0.0;  // weight_grads: tree: older partial sums of the gradients
  // optimizer_slots x params (SGD momentum 1, Adam/AdamW 2); sharded across D replicas, x the
  // last replica's shard of them (each within a norm block of a D-th)
  double optimizer_state = 0.0;
  double buffers = 0.0;              // non-trainable (batch-norm running statistics)
  double kept_activations = 0.0;     // inputs and saved tensors of the micro-batches in flight
  double recompute_workspace = 0.0;  // what one micro-batch's layers save, while recomputed
  double transient = 0.0;  // the largest layer's temporaries: its output, gradients, internals
  // Batched weight gradients' copies of inputs and output gradients, and under a zero-bubble
  // schedule the inputs and output gradients the layers that split their backward keep from a
  // micro-batch's I to its W.
  double weight_grad_operands = 0.0;
  double communication = 0.0;  // receives posted ahead, the gradient in use, a send, loss gradients
  // The fields above are the tensors' bytes; the memory account counts each tensor's block as
  // malloc rounds it (AllocatorModel), this much more in all.
  double allocator_rounding = 0.0;
  // A checkpoint adds nothing: its shard is written from the live state, one tensor at a time
  // (train/stage_tensors.h), and a resume reads each tensor into place.
  double state() const { return params + grads + gradient_partials + optimizer_state + buffers; }
  // (The allocator's rounding counts with the activations, most of whose tensors it rounds.)
  double activations() const {
    return kept_activations + recompute_workspace + transient + weight_grad_operands +
           allocator_rounding;
  }
  double total() const { return state() + activations() + communication; }
};

class MemoryModel {
 public:
  // `rows`: examples per micro-batch; `optimizer_slots`: floats of optimizer state per parameter;
  // `allocator`: how the run's malloc rounds each tensor's block, so that the bytes predicted are
  // those the memory account counts (the planner's; by default the tensors' bytes alone).
  // `values`: the graph of a model that is not a chain (value_costs), whose stages hold the values
  // of their live sets beside the layers' own tensors (walk_stage); empty for a chain.
  // `optimizer_shards`: the replicas D the optimizer state is sharded across
  // (optimizer.shard_across_replicas), else 1.
  MemoryModel(std::vector<LayerCost> costs, int64_t rows, int optimizer_slots,
              AllocatorModel allocator = AllocatorModel::exact(), ValueCosts values = {},
              int optimizer_shards = 1);

  int num_layers() const { return static_cast<int>(costs_.size()); }
  const std::vector<LayerCost>& costs() const { return costs_; }
  const ValueCosts& values() const { return values_; }
  int64_t rows() const { return rows_; }

  // Layers [begin, end) as a stage that receives its input unless it is the first stage and
  // sends its output unless it is the last.
  // Its fields are the tensors' bytes, and allocator_rounding what the allocator adds.
  StageMemory stage(int begin, int end, const StashProfile& stash, bool first_stage,
                    bool last_stage) const;
  // What one micro-batch's layers [begin, end) keep when not recomputed.
  double full_micro_batch(int begin, int end) const;
  // One micro-batch's inputs of layers [begin, end) (what per-layer recompute keeps).
  double layer_inputs(int begin, int end) const;
  // The most one micro-batch holds in its per-layer backward over layers [begin, end): at layer
  // i, while it is recomputed, the inputs of layers [begin, i], its output, what it saves and
  // the gradient waiting for it; then the inputs of layers [begin, i) (each is freed once its
  // layer is recomputed), what layer i saved, and its backward temporaries.
  double per_layer_backward(int begin, int end) const;
  // The most one micro-batch's recompute (pipeline recompute: always, except_last) holds beyond
  // what layers [begin, end) save: at layer i, what the layers after i have not saved yet
  // subtracted, that layer's forward temporaries (its output among them), and the output
  // gradient waiting for the backward (the loss gradient on the last stage).
  double recompute_forward(int begin, int end) const;
  // The most one micro-batch holds beyond the stash in its I over layers [begin, end), last layer
  // first: at layer i, that layer's I temporaries (`at`: backward_input_at_, or
  // per_layer_backward_input_at_ less the inputs before `begin`), and what each layer after it
  // holds for its W beyond its share of the stash (`beyond`).
  double splitting_backward(int begin, int end, const std::vector<double>& at, double offset,
                            const std::vector<double>& beyond) const;

 private:
  // stage() with every tensor as its block (all rounding inside the fields).
  StageMemory stage_in_blocks(int begin, int end, const StashProfile& stash, bool first_stage,
                              bool last_stage) const;
  // The parts of stage_in_blocks that a graph's values change, from the stage's walk: the
  // per-layer recompute's kept values, its backward's peak (`at`: per layer, with an I op's
  // temporaries in place of its backward's when splitting), a recompute's forward, and a forward's
  // and a backward's temporaries.
  // The first backward of a step with batched weight gradients (weight_grad_operands_filling):
  // the operands allocated at the peak and the temporaries beside them (`at`: per layer, its
  // backward's), or no operands and the recompute's forward (before the first layer's backward)
  // when that is larger. (A micro-batch's saved tensors stay until its backward ends.) `before`
  // (per layer, or empty): what a per-layer backward holds while it recomputes the layer, before
  // its backward allocates the layer's operands.
  std::pair<double, double> filling_backward(int begin, int end, const std::vector<double>& at,
                                             int micro_batches, double recompute_forward,
                                             const std::vector<double>& before = {}) const;
  // A per-layer backward's two phases at each layer i of [begin, end), indexed by global layer:
  // while layer i is recomputed (the inputs of layers [begin, i], its output, what it saves and
  // the gradient waiting for it) and in its backward (the inputs of layers [begin, i), what it
  // saved and its gradients; `input_only`: an I op's). `walk`: a graph's (its kept values in
  // place of the inputs, and the values its stage holds beside), or null (a chain).
  // per_layer_backward is, at each layer, the larger of the two.
  std::pair<std::vector<double>, std::vector<double>> per_layer_backward_phases(
      int begin, int end, const StageValues* walk, bool input_only) const;
  // The most a W op (StashProfile::weight_op) of one micro-batch holds over layers [begin, end)
  // beyond the other micro-batches' W work: at layer i, last first, its W work of layers
  // [begin, i] (the later layers' freed) beside the operands of `micro_batches` micro-batches of
  // layers [i, end) when `opens_group` (the group's first W allocates them layer by layer), else
  // of every layer.
  double weight_op(int begin, int end, int micro_batches, bool opens_group) const;
  // walk_stage of layers [begin, end), kept for the next query: a stage's moments ask for the
  // same layers one after another.
  StageValues walk(int begin, int end) const;
  // The blocks of layer `layer`'s batched weight-gradient operands for `micro_batches`.
  double weight_grad_operand_blocks(int layer, int micro_batches) const;
  double graph_first_kept(const StageValues& walk) const;
  std::vector<double> graph_per_layer_backward_at(int begin, int end, const StageValues& walk,
                                                  bool input_only) const;
  double graph_recompute_forward(int begin, int end, const StageValues& walk,
                                 bool last_stage) const;
  // (`evaluating`: StashProfile::evaluating.)
  double graph_forward(int begin, int end, const StageValues& walk, bool discarding,
                       bool evaluating) const;
  std::vector<double> graph_backward_at(int begin, int end, const StageValues& walk,
                                        bool input_only) const;
  double sum(const std::vector<double>& prefix, int begin, int end) const;
  // The block of a tensor of `bytes_per_example` per example of a micro-batch.
  double block(double bytes_per_example) const;

  std::vector<LayerCost> costs_;
  ValueCosts values_;
  // The last walk (walk()); shared by copies of this model, and locked.
  struct LastWalk {
    std::mutex mutex;
    int begin = -1, end = -1;
    StageValues walk;
  };
  std::shared_ptr<LastWalk> last_walk_ = std::make_shared<LastWalk>();
  int64_t rows_;
  int optimizer_slots_;
  int optimizer_shards_;
  AllocatorModel allocator_;
  // The same model without the allocator's rounding (null when this one has none).
  std::shared_ptr<const MemoryModel> tensors_;
  std::vector<double> params_, buffers_, kept_;  // prefix sums, size L + 1
  // Blocks a micro-batch keeps between its I and W (what each layer that splits its backward
  // keeps for its W, its output gradient among them), prefix sums.
  std::vector<double> pending_weight_blocks_;
  // Per layer, for the walk over a micro-batch's I (splitting_backward): what a layer whose I is
  // done holds for its W (0 for a layer that does not split), and that less what it saved (the
  // stash's share, freed by its I).
  std::vector<double> weight_work_held_, weight_work_beyond_saved_;
  // Per layer, a backward's temporaries and a per-layer backward's peak (the values of the sparse
  // tables backward_ and per_layer_backward_) for a micro-batch's I op: its layer's I temporaries.
  std::vector<double> backward_input_at_, per_layer_backward_input_at_;
  // Sparse tables of a layer's temporaries in a backward, a forward (or recompute) and a
  // discarding forward, and a per-layer recompute's first forward: [k][i] = max over layers
  // [i, i + 2^k).
  std::vector<std::vector<double>> backward_, forward_, discarding_, per_layer_forward_;
  // As forward_ and discarding_, for a layer handed its input (not a stage's first).
  std::vector<std::vector<double>> forward_consumed_, discarding_consumed_;
  // A layer's evaluation forward: its input (held to its end), output and internals.
  std::vector<std::vector<double>> evaluation_;
  // As forward_consumed_, of kept_[i + 1] + layer i's forward temporaries (what a recompute
  // holds at layer i; recompute_forward subtracts the offset).
  std::vector<std::vector<double>> recompute_forward_;
  std::vector<double> inputs_;  // prefix sums of the blocks of rows x input bytes
  // As backward_, of inputs_[i] + layer i's kept bytes and backward temporaries
  // (per_layer_backward subtracts the offset).
  std::vector<std::vector<double>> per_layer_backward_;
};

// Sends whose copies a link keeps at most (pipeline/link.cpp): a further send waits for the oldest.
inline constexpr int kSendsInFlight = 2;

}  // namespace mpipe::plan
