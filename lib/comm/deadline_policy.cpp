// The deadline of a wait: configured, or derived from the slowest measured step.
#include "comm/deadline_policy.h"

#include <algorithm>

namespace mpipe::comm {

DeadlinePolicy::DeadlinePolicy(const CommConfig& config) : config_(config) {}

void DeadlinePolicy::record_step(double seconds) {
  if (steps_ >= kWarmupSteps) slowest_step_s_ = std::max(slowest_step_s_, seconds);
  if (steps_ < kWarmupSteps) ++steps_;
}

double DeadlinePolicy::timeout(WaitPhase phase) const {
  if (phase == WaitPhase::kLong || !warmed_up()) return config_.startup_timeout_s;
  if (config_.timeout_s > 0) return config_.timeout_s;
  return std::max(kMinAutoTimeout, kAutoTimeoutSteps * slowest_step_s_);
}

std::optional<double> DeadlinePolicy::stop_grace(WaitPhase phase) const {
  if (phase == WaitPhase::kLong) return std::nullopt;
  if (config_.stop_grace_s > 0) return std::min(config_.stop_grace_s, timeout(phase));
  if (!warmed_up()) return std::nullopt;
  return std::min(std::max(kMinAutoGrace, kAutoGraceSteps * slowest_step_s_), timeout(phase));
}

}  // namespace mpipe::comm
