// Timeline simulator: runs all K rank programs in simulated time, without MPI, to measure
// makespan, bubble fraction and in-flight micro-batches, and to find deadlocks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plan/op.h"
#include "plan/pipeline_config.h"
#include "plan/placement.h"

namespace mpipe::plan {

struct SimulationOptions {
  double forward_time = 1.0;   // time units one F takes
  double backward_time = 2.0;  // time units one B takes (recompute included)
  // The share of a backward that its weight gradients take: W takes this, I (the input
  // gradient) the rest of backward_time, so that I + W = B.
  double weight_time = 1.0;
  // What the chunk's deferred weight gradients of all M micro-batches take (WB ops,
  // weight_grads: batched or grouped, at the rate of their products' shape): a WB op of every
  // micro-batch (-1) takes all of it, a group's its share (the group's micro-batches / M).
  double batched_weight_time = 0.0;
  // A message sent at t occupies its sender's link for send_transfer (after the sender's earlier
  // messages: they queue on one link) and can be received send_latency after it left the link.
  double send_latency = 0.0;
  double send_transfer = 0.0;
  // How the ranks' chunks map to global stages (the schedule's: plan::placement_for).
  PlacementKind placement = PlacementKind::kLoop;
  // Per stage (when not empty, one entry per global stage, K·v of them, placed as `placement`
  // says): F, B, W and WB times of stage s, instead of the uniform ones above (a
  // partition's stages differ).
  std::vector<double> stage_forward_times = {};
  std::vector<double> stage_backward_times = {};
  std::vector<double> stage_weight_times = {};
  std::vector<double> stage_batched_weight_times = {};
  double forward(int stage) const;
  double backward(int stage) const;
  double weight(int stage) const;
  double batched_weight(int stage) const;
  double input_backward(int stage) const { return backward(stage) - weight(stage); }
};

// One compute op (F, B, I, W or WB) as it ran, or a receive the rank waited on: [start, end) in
// time units.
struct TimedOp {
  Op op;
  double start = 0.0;
  double end = 0.0;
};

// One rank's timeline (with virtual stages, its chunks' ops together; a micro-batch counts once
// per chunk it is in).
struct RankTimeline {
  std::vector<TimedOp> compute;  // in program order
  // The receives the rank reached before their message had arrived, in program order: from when
  // it reached the receive to the arrival (the idle time before the ops that follow).
  std::vector<TimedOp> waits;
  double busy_time = 0.0;        // sum of compute durations
  int peak_in_flight = 0;        // most micro-batches forwarded but not yet backwarded (B or I)
  int peak_pending_weights = 0;  // most micro-batches past their I whose W has not yet run
};

// Where a rank stopped when no rank could make progress.
struct StuckRank {
  int rank = 0;
  std::size_t op_index = 0;  // index into that rank's program
  Op op;                     // the receive it waits on
};

struct SimulationResult {
  std::vector<RankTimeline> ranks;  // one per rank of the pipeline (K)
  int virtual_stages = 1;           // v: chunks per rank, one more than the largest op chunk
  double makespan = 0.0;            // time the last op ends
  // 1 - (sum of busy time over ranks) / (K * makespan): the idle share of the pipeline.
  double bubble_fraction = 0.0;
  std::vector<StuckRank> stuck;  // empty unless the programs deadlock
  // One line per (sender, receiver, direction) whose send order differs from the receiver's
  // receive order; empty when all agree.
  std::vector<std::string> order_mismatches;

  bool deadlocked() const { return !stuck.empty(); }
  bool orders_match() const { return order_mismatches.empty(); }
  // "deadlock: rank 0 waits at op 3 (RG0); rank 1 waits at op 0 (RA1)", or "" if none.
  std::string deadlock_report() const;
};

// Runs programs[r] as rank r, holding v chunks (v: one more than the largest chunk an op names;
// options.placement places them). Compute ops take the configured time of their global
// stage (a group's WB op its share: SimulationOptions::batched_weight_time); sends never block; a
// receive (matched by chunk and micro-batch with the peer's send of the same kind) blocks until
// that message has arrived. Throws mpipe::Error for a program that sends to or receives from a
// stage that does not exist. A deadlock is reported in the result, not thrown.
SimulationResult simulate(const std::vector<Program>& programs,
                          const SimulationOptions& options = {});

// Measured costs of a model of identical blocks (scaling_mlp: Linear + ReLU), in seconds, each
// for one micro-batch of the size being predicted (so micro-batch efficiency is in the numbers).
struct BlockCosts {
  double forward_s = 0.0;   // one block's forward
  double backward_s = 0.0;  // one block's backward, its recompute included where there is one
  double weight_s = 0.0;    // the part of backward_s a split backward's W op takes (zero-bubble)
  double head_forward_s = 0.0;   // the last stage's extra layers and the loss (0: folded in)
  double head_backward_s = 0.0;  //
  double transfer_s = 0.0;       // one activation or gradient message between neighbouring stages
  double update_s = 0.0;  // per block per step: zeroing its gradients and its optimizer update
  double step_overhead_s = 0.0;  // per step on every stage, whatever K (data, loss allreduce)
};

struct BlockProjection {
  double pipeline_s = 0.0;  // the simulated forward/backward timeline (with transfers)
  double step_s = 0.0;      // pipeline + the slowest stage's update + the overhead
  double samples_per_s = 0.0;
  double bubble_fraction = 0.0;
};

// Predicts one step of `num_blocks` blocks on `num_ranks` ranks of `virtual_stages` chunks
// each (K·v stages: stage s gets num_blocks / (K·v) blocks, the first num_blocks % (K·v) stages
// one more; the last also the head; a rank updates the blocks of all its chunks), with
// `num_micro_batches` micro-batches of a mini-batch of `batch_size` examples, by simulating the
// schedule's programs with the costs above.
BlockProjection project_blocks(const BlockCosts& costs, int num_blocks, int num_ranks,
                               int num_micro_batches, int64_t batch_size,
                               ScheduleKind schedule = ScheduleKind::kGpipe,
                               int virtual_stages = 1);

}  // namespace mpipe::plan
