// The merged timeline of every rank in the Chrome trace event format (trace.json), which
// Perfetto (ui.perfetto.dev) and chrome://tracing open.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "log/trace_recorder.h"

namespace mpipe::log {

// One rank's events, their times already moved onto rank 0's clock.
struct RankTimeline {
  int world_rank = 0;
  int stage = 0;
  int replica = 0;
  double clock_offset_s = 0.0;       // what was added to this rank's clock to get rank 0's
  double clock_uncertainty_s = 0.0;  // half the round trip of the sample that gave the offset
  std::vector<TraceEvent> events;
};

// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}: one process per rank
// (pid = world rank, named "rank 1: stage 1, replica 0"), thread 0 its compute track, thread 1
// its communication track; spans are complete events ("X"), send completions instants ("i");
// times in microseconds from the earliest event; each event's args hold its step and
// micro-batch. otherData holds each rank's clock offset and uncertainty.
nlohmann::json chrome_trace(const std::vector<RankTimeline>& ranks);

}  // namespace mpipe::log
