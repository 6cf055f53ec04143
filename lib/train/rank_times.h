// StepTimeTotals: where this rank's step time went over some steps (a logging window, the run),
// and the collective that turns every rank's totals into each pipeline rank's compute, waiting
// and bubble (log::RankTimes).
#pragma once

#include <cstdint>

#include "comm/communicator.h"
#include "comm/topology.h"
#include "log/metrics_writer.h"
#include "train/trainer.h"

namespace mpipe::train {

class StepTimeTotals {
 public:
  // Compute: the executor's (forward, backward, recompute, loss, W). Waiting: for neighbours'
  // messages, completing sends, the data-parallel allreduce and the step's world allreduce.
  void add(const StepReport& report);
  void add(const StepTimeTotals& other);
  int64_t steps() const { return steps_; }

  // Collective over `world`: per pipeline rank, the means over its replicas of the compute and
  // waiting per step, and the bubble, waiting / step time; the mean bytes a replica of it sent per
  // step; and the largest of its replicas' tensor high-water marks (MemoryAccount::process) now.
  // Empty when no step was added anywhere.
  log::RankTimes per_rank(const comm::Communicator& world, const comm::Topology& topology) const;

 private:
  double compute_s_ = 0.0;
  double waiting_s_ = 0.0;
  double step_s_ = 0.0;
  double sent_bytes_ = 0.0;
  int64_t steps_ = 0;
};

}  // namespace mpipe::train
