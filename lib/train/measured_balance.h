// MeasuredBalance: pipeline.balance: measured. After pipeline.balance_after steps of this process
// (and every balance_every steps after, up to balance_moves moves) the ranks agree on every layer's
// measured time, the exact partitioner re-runs with it, and when the slowest rank gets at least
// kMinimumGain faster (and the move fits pipeline.memory_limit) the layers move
// (Trainer::repartition); each decision is logged and kept for summary.json.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "config/experiment.h"
#include "train/measured_balance_schedule.h"
#include "train/trainer.h"

namespace mpipe::train {

// Test hook: MPIPE_TEST_SLOW_RANK=<world rank>:<factor>[:<first step>:<last step>] makes that
// rank's layer ops busy-wait after each for <factor> (>= 1) - 1 times its CPU time, in every
// step or in steps first..last of this process (from 1), so that a test or benchmark can slow one
// rank down (or change its speed during a run). Sets `times` on that rank; throws InputError for a
// bad value.
void apply_test_slowdown(int world_rank, pipeline::LayerTimes& times);

// The ranks' speeds (measured compute over predicted, 1 = as predicted) that re-partitioning
// goes by: a speed within MeasuredBalance::kMinimumGain of the median counts as the median. A
// few percent between ranks of equal work is what a short window measures from noise alone (on
// a 16-core machine, re-partitions that followed such differences ran no faster), so only a
// rank clearly slower or faster than the others moves layers.
std::vector<double> distinct_speeds(const std::vector<double>& speeds);

class MeasuredBalance {
 public:
  // A move must make the predicted step at least this much faster.
  static constexpr double kMinimumGain = 0.05;

  MeasuredBalance(const config::Experiment& experiment, Trainer& trainer,
                  const comm::Communicator& world);

  // The run's first step: 0, or the step a resumed run starts from (it measures again).
  void start_at(int64_t first_step) { schedule_.start_at(first_step); }
  // Collective over the world, after `done` steps: re-partitions when due (see above).
  void after_step(int64_t done);

  // The partitions the run used: the first (by the planner's prediction), then one record per
  // measured decision, moved or not.
  const nlohmann::json& history() const { return history_; }

 private:
  void rebalance(int64_t done);
  // Why the move from `from` to `to` would exceed pipeline.memory_limit (move_peak_bytes), or
  // nothing.
  std::string move_over_memory_limit(const plan::PipelinePlan& from,
                                     const plan::PipelinePlan& to) const;
  // Every layer's measured time per step: per layer, the largest over the replicas of the median
  // over the window's steps on the rank that ran it.
  std::vector<double> agreed_layer_times() const;

  const config::Experiment& experiment_;
  Trainer& trainer_;
  const comm::Communicator& world_;
  bool enabled_;
  MeasuredBalanceSchedule schedule_;
  int moves_left_;
  nlohmann::json history_ = nlohmann::json::array();
};

}  // namespace mpipe::train
