// LayerTimes: the wall time of each layer's training ops (forward, backward, recompute, weight
// gradients) per step on this rank, and the median step of a window, for pipeline.balance:
// measured.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace mpipe::pipeline {

class LayerTimes {
 public:
  using Clock = std::chrono::steady_clock;

  // Test hook: in steps first..last (counted by begin_step from 1), every timed op busy-waits
  // after it for `factor` - 1 times the CPU time it took this thread (`factor` >= 1), so a rank
  // can be made slow on purpose (MPIPE_TEST_SLOW_RANK, train/measured_balance.h). The CPU time,
  // not the wall time: a preemption during an op (a loaded machine's milliseconds) is not
  // multiplied, which made one preempted op outweigh the rest of its rank.
  void set_slowdown(double factor, int64_t first_step, int64_t last_step) {
    slowdown_ = factor;
    slow_first_ = first_step;
    slow_last_ = last_step;
  }
  // The factor of the current step.
  double slowdown() const {
    return steps_ >= slow_first_ && steps_ <= slow_last_ ? slowdown_ : 1.0;
  }
  // Whether ended steps join the window (off: nothing is kept).
  void set_windowed(bool windowed) { windowed_ = windowed; }
  // Whether the ops are timed at all: for the window or the slowdown.
  bool active() const { return windowed_ || slowdown() > 1.0; }

  // Starts a step: what was timed since the last end_step (an evaluation) is dropped.
  void begin_step() {
    current_.clear();
    ++steps_;
  }
  void add(int global_layer, double seconds) { current_[global_layer] += seconds; }
  // Ends a step: its per-layer totals join the window.
  void end_step();
  // Per layer timed in the window, the median over its steps of the layer's time per step (the
  // mean of the middle two for an even count); clears the window.
  std::map<int, double> take_window_medians();

 private:
  double slowdown_ = 1.0;
  int64_t slow_first_ = 0;
  int64_t slow_last_ = 0;
  int64_t steps_ = 0;  // begun
  bool windowed_ = false;
  std::map<int, double> current_;
  std::vector<std::map<int, double>> window_;  // one per step
};

// Times one op of one layer into `times` (nothing when it is null).
class LayerTimeScope {
 public:
  LayerTimeScope(LayerTimes* times, int global_layer);
  ~LayerTimeScope();
  LayerTimeScope(const LayerTimeScope&) = delete;
  LayerTimeScope& operator=(const LayerTimeScope&) = delete;

 private:
  LayerTimes* times_;
  int layer_;
  LayerTimes::Clock::time_point start_;
  // This thread's CPU time at the start, when the slowdown hook is on for this op.
  std::optional<std::chrono::nanoseconds> cpu_start_;
};

}  // namespace mpipe::pipeline
