// DeadlinePolicy: how long a wait may take, from the settings and measured steps and activities.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "comm/comm_config.h"

namespace mpipe::comm {

// What a rank is doing while it waits: a training step, or anything slower and rarer (start-up,
// evaluation, checkpoints, the end of the run).
enum class WaitPhase { kStep, kLong };

// Pure: no MPI, no clock.
class DeadlinePolicy {
 public:
  static constexpr int kWarmupSteps = 3;  // steps not measured (and given the long deadline)
  static constexpr double kMinAutoTimeout = 300.0;   // auto timeout: at least 5 min ...
  static constexpr double kAutoTimeoutSteps = 20.0;  // ... and 20 step times (or activity runs)
  static constexpr double kMinAutoGrace = 10.0;      // auto stop grace: at least 10 s ...
  static constexpr double kAutoGraceSteps = 2.0;     // ... and 2 step times

  explicit DeadlinePolicy(const CommConfig& config = {});

  // A finished training step of `seconds` (its waits included); the first kWarmupSteps (oneDNN
  // primitive creation, first touch of memory) are counted but not measured.
  void record_step(double seconds);
  bool warmed_up() const { return steps_ >= kWarmupSteps; }
  // The slowest step measured after the warm-up; 0 before.
  double step_time() const { return slowest_step_s_; }
  // A finished long activity ("checkpoint", "evaluation") of `seconds`, the long scopes inside it
  // included.
  void record_long(const std::string& activity, double seconds);

  // Seconds a wait may take: in a step after the warm-up, comm.timeout (or auto); in a long
  // `activity` that finished before, the larger of comm.timeout (or auto's 5 min) and 20 times its
  // slowest run, at most comm.startup_timeout (so a peer lost during the tenth checkpoint ends the
  // job as soon as one lost in a step would, unless checkpoints are slow); otherwise (start-up,
  // the warm-up, an activity's first run) comm.startup_timeout.
  double timeout(WaitPhase phase, const std::string& activity = {}) const;
  // Seconds a wait may still take once a stop was requested (at most its timeout); nothing when
  // it keeps its deadline: outside steps (a checkpoint in progress should finish), and in the
  // warm-up steps unless comm.stop_grace is set (no step time is known yet).
  std::optional<double> stop_grace(WaitPhase phase) const;
  const CommConfig& config() const { return config_; }

 private:
  CommConfig config_;
  int steps_ = 0;
  double slowest_step_s_ = 0.0;
  std::map<std::string, double, std::less<>> slowest_long_s_;  // by activity
};

}  // namespace mpipe::comm
