// The deadline of a wait: configured, or derived from the slowest measured step or long activity.
#include "comm/deadline_policy.h"

#include <algorithm>

namespace mpipe::comm {

DeadlinePolicy::DeadlinePolicy(const CommConfig& config) : config_(config) {}

void DeadlinePolicy::record_step(double seconds) {
  if (steps_ >= kWarmupSteps) slowest_step_s_ = std::max(slowest_step_s_, seconds);
  if (steps_ < kWarmupSteps) ++steps_;
}

void DeadlinePolicy::record_long(const std::string& activity, double seconds) {
  double& slowest = slowest_long_s_[activity];
  slowest = std::max(slowest, seconds);
}

double DeadlinePolicy::timeout(WaitPhase phase, const std::string& activity) const {
  if (phase == WaitPhase::kLong) {
    const auto measured = slowest_long_s_.find(activity);
    if (measured == slowest_long_s_.end()) return config_.startup_timeout_s;
    const double floor_s = config_.timeout_s > 0 ? config_.timeout_s : kMinAutoTimeout;
    return std::min(config_.startup_timeout_s,
                    std::max(floor_s, kAutoTimeoutSteps * measured->second));
  }
  if (!warmed_up()) return config_.startup_timeout_s;
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
