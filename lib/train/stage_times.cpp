// StepTimeTotals: sums of a rank's step times, and the per-stage means over the world.
#include "train/stage_times.h"

#include <algorithm>
#include <vector>

#include "core/memory_account.h"

namespace mpipe::train {

void StepTimeTotals::add(const StepReport& report) {
  compute_s_ += report.times.compute_s;
  waiting_s_ += report.times.wait_s + report.times.send_s + report.allreduce_s + report.sync_s;
  step_s_ += report.step_s;
  sent_bytes_ += static_cast<double>(report.sent_bytes);
  ++steps_;
}

void StepTimeTotals::add(const StepTimeTotals& other) {
  compute_s_ += other.compute_s_;
  waiting_s_ += other.waiting_s_;
  step_s_ += other.step_s_;
  sent_bytes_ += other.sent_bytes_;
  steps_ += other.steps_;
}

log::StageTimes StepTimeTotals::per_stage(const comm::Communicator& world,
                                          const comm::Topology& topology) const {
  constexpr size_t kNumbers = 7;
  const double mine[kNumbers] = {static_cast<double>(topology.pipeline_rank),
                                 compute_s_,
                                 waiting_s_,
                                 step_s_,
                                 static_cast<double>(steps_),
                                 static_cast<double>(MemoryAccount::process().peak_bytes()),
                                 sent_bytes_};
  const std::vector<double> all = world.allgatherv(std::span<const double>(mine, kNumbers));
  const auto stages = static_cast<size_t>(topology.num_pipeline_ranks);
  std::vector<double> compute(stages), waiting(stages), step(stages), steps(stages),
      peak_bytes(stages), sent(stages);
  for (size_t at = 0; at + kNumbers <= all.size(); at += kNumbers) {
    const auto stage = static_cast<size_t>(all[at]);
    compute[stage] += all[at + 1];
    waiting[stage] += all[at + 2];
    step[stage] += all[at + 3];
    steps[stage] += all[at + 4];
    peak_bytes[stage] = std::max(peak_bytes[stage], all[at + 5]);
    sent[stage] += all[at + 6];
  }
  log::StageTimes times;
  for (size_t s = 0; s < stages; ++s) {
    if (steps[s] == 0 || step[s] <= 0) return {};
    times.compute_ms.push_back(1e3 * compute[s] / steps[s]);
    times.waiting_ms.push_back(1e3 * waiting[s] / steps[s]);
    times.bubble.push_back(waiting[s] / step[s]);
    times.sent_bytes.push_back(sent[s] / steps[s]);
  }
  times.peak_tensor_bytes = peak_bytes;
  return times;
}

}  // namespace mpipe::train
