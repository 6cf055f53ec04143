// StepTimeTotals: sums of a rank's step times, and the per-stage means over the world.
#include "train/stage_times.h"

#include <vector>

namespace mpipe::train {

void StepTimeTotals::add(const StepReport& report) {
  compute_s_ += report.times.compute_s;
  waiting_s_ += report.times.wait_s + report.times.send_s + report.allreduce_s + report.sync_s;
  step_s_ += report.step_s;
  ++steps_;
}

void StepTimeTotals::add(const StepTimeTotals& other) {
  compute_s_ += other.compute_s_;
  waiting_s_ += other.waiting_s_;
  step_s_ += other.step_s_;
  steps_ += other.steps_;
}

log::StageTimes StepTimeTotals::per_stage(const comm::Communicator& world,
                                          const comm::Topology& topology) const {
  const double mine[5] = {static_cast<double>(topology.stage), compute_s_, waiting_s_, step_s_,
                          static_cast<double>(steps_)};
  const std::vector<double> all = world.allgatherv(std::span<const double>(mine, 5));
  const auto stages = static_cast<size_t>(topology.num_stages);
  std::vector<double> compute(stages), waiting(stages), step(stages), steps(stages);
  for (size_t at = 0; at + 5 <= all.size(); at += 5) {
    const auto stage = static_cast<size_t>(all[at]);
    compute[stage] += all[at + 1];
    waiting[stage] += all[at + 2];
    step[stage] += all[at + 3];
    steps[stage] += all[at + 4];
  }
  log::StageTimes times;
  for (size_t s = 0; s < stages; ++s) {
    if (steps[s] == 0 || step[s] <= 0) return {};
    times.compute_ms.push_back(1e3 * compute[s] / steps[s]);
    times.waiting_ms.push_back(1e3 * waiting[s] / steps[s]);
    times.bubble.push_back(waiting[s] / step[s]);
  }
  return times;
}

}  // namespace mpipe::train
