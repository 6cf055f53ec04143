// Executor: runs a rank's program op by op, mapping compute ops to the stage of the op's chunk
// and communication ops to the link; the last stage turns outputs into loss gradients.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "comm/bucketed_allreduce.h"
#include "kernels/context.h"
#include "log/trace_recorder.h"
#include "nn/loss.h"
#include "pipeline/bundle.h"
#include "pipeline/gradient_buckets.h"
#include "pipeline/link.h"
#include "pipeline/stage.h"
#include "plan/op.h"
#include "plan/placement.h"
#include "plan/rank_messages.h"

namespace mpipe::pipeline {

// The micro-batches of one round (a training step or an evaluation batch).
struct RoundPlan {
  int64_t round = 0;  // the step, or the evaluation batch number
  uint64_t seed = 0;
  std::vector<int64_t> rows;           // examples in each micro-batch
  std::vector<int64_t> first_example;  // global mini-batch index of each one's first example
  // Per chunk, one example's shape of each value its stage receives (its input bundle) and of
  // each gradient it receives (its output values that need one): model::ModelPlan::live_shapes
  // and live_grad_shapes of the cuts around it.
  std::vector<std::vector<Shape>> stage_inputs;
  std::vector<std::vector<Shape>> stage_output_grads;
  float grad_scale = 1.0f;  // multiplies the loss gradient (1 / rows of the batch)
};

// Reads data only where it is needed: inputs on the first stage, targets on the last (global
// stages 0 and K·v - 1). The inputs are the first cut's live set: the data inputs the model reads.
struct MicroBatchData {
  std::function<Bundle(int micro_batch)> inputs;
  std::function<Tensor(int micro_batch)> targets;
};

// Loss totals of the micro-batches this rank saw (non-zero only on the rank of the last stage).
struct LossTotals {
  double sum = 0.0;
  int64_t rows = 0;
  int64_t correct = 0;
  // Counts one micro-batch's loss.
  void add(const nn::LossOutput& loss) {
    sum += loss.sum;
    rows += loss.rows;
    correct += loss.correct;
  }
};

// Where one training step's wall time went on this rank (all its chunks), in seconds.
struct StepTimes {
  double compute_s = 0.0;  // forward, backward (with recompute) and the loss
  double wait_s = 0.0;     // waiting for a neighbour's activations or gradients
  double send_s = 0.0;     // posting sends and completing them at the end of the step
};

class Executor {
 public:
  // Rank `rank` of `placement`, holding `stages` (one per chunk: stages[c] is global stage
  // placement.stage_of(rank, c)). Installs a layer hook on each stage (Stage::set_layer_hook)
  // that drives MPI progress between layers; the stages must not be given another while the
  // executor lives.
  Executor(std::vector<Stage*> stages, Link& link, int rank, plan::Placement placement,
           const nn::Loss& loss, kernels::KernelContext& kernels);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs one training step: each op on the stage of its chunk. Gradients are accumulated into
  // the stages' parameter buffers. A chunk has a WB op exactly when its stage batches its weight
  // gradients (Stage::defers_grads; make_program with the stages' weight_grads: one per chunk
  // batched, one per group grouped); the first WB of every micro-batch (batched) completes the
  // rank's sends before it starts. `reduction` (optional; over the rank's buckets
  // as rank_gradient_buckets cuts its chunks' gradient buffers): during a chunk's last backward
  // (or W, or WB), each layer's bucket is started as soon as that layer's gradient is complete,
  // while the earlier layers' backward still runs; the caller finishes it after the step.
  // `messages` is plan::step_messages's for the program: before each op the receives it counts
  // are posted, after it the link releases its sends up to its count, so the messages held at
  // every op are the ones the memory walk counts.
  LossTotals train_step(const plan::Program& program, const plan::RankMessages& messages,
                        const RoundPlan& plan, const MicroBatchData& data,
                        comm::BucketedAllreduce* reduction = nullptr);
  // The rank's data-parallel buckets, over its chunks' gradient buffers (rank_gradient_buckets):
  // what a `reduction` for train_step reduces.
  const std::vector<std::span<float>>& gradient_buckets() const { return buckets_.buckets; }
  // The times of the last train_step.
  const StepTimes& last_step_times() const { return times_; }
  // While `trace` (null: none) is recording, every op of train_step is an event: F, B (with the
  // recomputes inside it), W and WB, the sends posted and the waits on receives.
  void set_trace(log::TraceRecorder* trace) { trace_ = trace; }
  // Forward-only pass of every micro-batch in ascending order through each chunk in turn
  // (evaluation mode). With `examples`, the rank of the last stage also appends each example's
  // own loss (its sum and rows, from the loss of that example alone), in example order; with
  // `outputs`, the model's output (what the loss reads: the logits of a classifier or a language
  // model), row-major, in example order.
  LossTotals evaluate(const RoundPlan& plan, const MicroBatchData& data,
                      std::vector<nn::LossOutput>* examples = nullptr,
                      std::vector<float>* outputs = nullptr);

 private:
  int num_chunks() const { return static_cast<int>(stages_.size()); }
  bool is_first(int chunk) const { return placement_.is_first(rank_, chunk); }
  bool is_last(int chunk) const { return placement_.is_last(rank_, chunk); }
  nn::LayerContext layer_context(const RoundPlan& plan, int micro_batch, bool training) const;
  void post_recv(const plan::Op& op, const RoundPlan& plan);
  // Runs `op`; returns the bytes of the message it sent or received (0 for a compute op).
  int64_t run_op(const plan::Op& op, const RoundPlan& plan, const MicroBatchData& data,
                 LossTotals& totals);
  // Sends `message` for communication op `op`; returns its bytes.
  int64_t send(Direction direction, int64_t round, const plan::Op& op, Tensor message);
  // A stage's layer hook: progress on the pending transfers and reductions, and the start of a
  // layer's gradient reduction after its last backward.
  void between_layers(int global_layer, bool backward);
  // Records `op` as a trace event with its chunk and message bytes (a backward also closes its
  // recomputes).
  void trace_op(const plan::Op& op, log::TraceRecorder::Clock::time_point start,
                log::TraceRecorder::Clock::time_point end, int64_t bytes);
  // The stage's global index, for logs.
  int global_stage(int chunk) const { return placement_.stage_of(rank_, chunk); }

  std::vector<Stage*> stages_;
  Link& link_;
  int rank_;
  plan::Placement placement_;
  const nn::Loss& loss_;
  kernels::KernelContext& kernels_;
  double& time_slot(plan::OpKind kind);  // the StepTimes field an op's time goes to

  StepTimes times_;
  log::TraceRecorder* trace_ = nullptr;
  comm::BucketedAllreduce* reduction_ = nullptr;  // during a train_step that was given one
  bool in_last_backward_ = false;
  RankBuckets buckets_;  // and each layer's first bucket among them
  // Tensors between the op that produces them and the op that consumes them, by (chunk,
  // micro-batch).
  using Slot = std::pair<int, int>;
  std::map<Slot, Bundle> inputs_;        // RA → F
  std::map<Slot, Bundle> outputs_;       // F → SA
  std::map<Slot, Bundle> grad_outputs_;  // RG (or the loss) → B
  std::map<Slot, Bundle> grad_inputs_;   // B → SG
};

}  // namespace mpipe::pipeline
