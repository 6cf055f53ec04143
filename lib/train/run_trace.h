// RunTrace: log.trace_steps for one run: every rank's clock offset from rank 0 measured at
// start-up, recording switched on for the traced steps, and the ranks' timelines merged into
// rank 0's trace.json after the last traced step (or at an earlier agreed stop).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm/communicator.h"
#include "comm/topology.h"
#include "log/trace_recorder.h"
#include "plan/placement.h"

namespace mpipe::train {

class RunTrace {
 public:
  // `steps`: log.trace_steps (ascending, from 1); `first_step`: the steps this run has already
  // (a resumed run's checkpoint step); `placement` names the global stage of each of this rank's
  // chunks. Collective over `world` when a traced step lies ahead: measures the clock offset.
  RunTrace(std::vector<int64_t> steps, int64_t first_step, const comm::Communicator& world,
           const comm::Topology& topology, const plan::Placement& placement,
           log::TraceRecorder& recorder);

  // Before step `step` (counted from 1) starts: records it when it is traced, else stops
  // recording. Recording goes on through the step's checkpoint and evaluation.
  void before_step(int64_t step);
  // Whether merge must be called after step `done`: the last traced step, or a stop (`stopping`)
  // with traced steps recorded and not yet written. The same on every rank.
  bool due(int64_t done, bool stopping) const;
  // Collective over the world: gathers every rank's events onto rank 0's clock and returns the
  // Chrome trace on rank 0 (null elsewhere); clears the events and stops recording.
  nlohmann::json merge();

 private:
  std::vector<int64_t> steps_;
  const comm::Communicator& world_;
  comm::Topology topology_;
  std::vector<int> chunk_stages_;  // the global stage of each of this rank's chunks
  log::TraceRecorder& recorder_;
  double clock_offset_s_ = 0.0;
  double clock_uncertainty_s_ = 0.0;
  bool recorded_ = false;  // a traced step ran and is not yet merged
};

}  // namespace mpipe::train
