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
  int replica = 0;
  double clock_offset_s = 0.0;       // what was added to this rank's clock to get rank 0's
  double clock_uncertainty_s = 0.0;  // half the round trip of the sample that gave the offset
  // The global stage of each of the rank's model chunks (pipeline.virtual_stages; one entry when
  // it holds one stage): where an event of chunk c ran.
  std::vector<int> chunk_stages = {0};
  std::vector<TraceEvent> events;
};

// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}: one process per rank
// (pid = world rank, named "rank 1: stage 1, replica 0", or with chunks "rank 1: stages 1, 5;
// replica 0"), thread 0 its compute track, thread 1 its communication track; spans are complete
// events ("X"), send completions instants ("i"); times in microseconds from the earliest event.
// An op's event is named with its chunk when the rank holds several ("F3.1": micro-batch 3 of
// chunk 1, as programs print it), and its args hold its step, micro-batch, chunk and global stage.
// otherData holds each rank's clock offset and uncertainty.
nlohmann::json chrome_trace(const std::vector<RankTimeline>& ranks);

}  // namespace mpipe::log
