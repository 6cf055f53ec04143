// StepTimeTotals: sums of a rank's step times, and the per-rank means over the world.
#include "train/rank_times.h"

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

log::RankTimes StepTimeTotals::per_rank(const comm::Communicator& world,
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
  const auto ranks = static_cast<size_t>(topology.num_pipeline_ranks);
  std::vector<double> compute(ranks), waiting(ranks), step(ranks), steps(ranks), peak_bytes(ranks),
      sent(ranks);
  for (size_t at = 0; at + kNumbers <= all.size(); at += kNumbers) {
    const auto rank = static_cast<size_t>(all[at]);
    compute[rank] += all[at + 1];
    waiting[rank] += all[at + 2];
    step[rank] += all[at + 3];
    steps[rank] += all[at + 4];
    peak_bytes[rank] = std::max(peak_bytes[rank], all[at + 5]);
    sent[rank] += all[at + 6];
  }
  log::RankTimes times;
  for (size_t r = 0; r < ranks; ++r) {
    if (steps[r] == 0 || step[r] <= 0) return {};
    times.compute_ms.push_back(1e3 * compute[r] / steps[r]);
    times.waiting_ms.push_back(1e3 * waiting[r] / steps[r]);
    times.bubble.push_back(waiting[r] / step[r]);
    times.sent_bytes.push_back(sent[r] / steps[r]);
  }
  times.peak_tensor_bytes = peak_bytes;
  return times;
}

}  // namespace mpipe::train
