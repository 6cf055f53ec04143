// chrome_trace: trace events and the metadata that names each rank's process and tracks.
#include "log/chrome_trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "core/error.h"

namespace mpipe::log {
namespace {

constexpr int kComputeTrack = 0;
constexpr int kCommunicationTrack = 1;

nlohmann::json metadata(const char* name, int pid, int tid, nlohmann::json args) {
  nlohmann::json event = {{"name", name}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) event["tid"] = tid;
  return event;
}

}  // namespace

nlohmann::json chrome_trace(const std::vector<RankTimeline>& ranks) {
  double origin_s = std::numeric_limits<double>::infinity();
  for (const RankTimeline& rank : ranks) {
    for (const TraceEvent& event : rank.events) origin_s = std::min(origin_s, event.start_s);
  }
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json offsets = nlohmann::json::array(), uncertainties = nlohmann::json::array();
  for (const RankTimeline& rank : ranks) {
    const int pid = rank.world_rank;
    const bool chunks = rank.chunk_stages.size() > 1;
    const std::string name = chunks ? fmt::format("rank {}: stages {}; replica {}", pid,
                                                  fmt::join(rank.chunk_stages, ", "), rank.replica)
                                    : fmt::format("rank {}: stage {}, replica {}", pid,
                                                  rank.chunk_stages.front(), rank.replica);
    events.push_back(metadata("process_name", pid, -1, {{"name", name}}));
    events.push_back(metadata("process_sort_index", pid, -1, {{"sort_index", pid}}));
    events.push_back(metadata("thread_name", pid, kComputeTrack, {{"name", "compute"}}));
    events.push_back(
        metadata("thread_name", pid, kCommunicationTrack, {{"name", "communication"}}));
    events.push_back(metadata("thread_sort_index", pid, kComputeTrack, {{"sort_index", 0}}));
    events.push_back(metadata("thread_sort_index", pid, kCommunicationTrack, {{"sort_index", 1}}));
    offsets.push_back(rank.clock_offset_s);
    uncertainties.push_back(rank.clock_uncertainty_s);
    for (const TraceEvent& event : rank.events) {
      const bool compute = is_compute(event.kind);
      nlohmann::json args = {{"step", event.step}};
      if (event.micro_batch >= 0) args["micro_batch"] = event.micro_batch;
      if (event.chunk >= 0) {
        check(std::cmp_less(event.chunk, rank.chunk_stages.size()),
              "chrome_trace: rank {} has {} chunks, an event chunk {}", pid,
              rank.chunk_stages.size(), event.chunk);
        args["chunk"] = event.chunk;
        args["stage"] = rank.chunk_stages[static_cast<size_t>(event.chunk)];
      }
      if (event.bytes > 0) args["bytes"] = event.bytes;
      nlohmann::json out = {
          {"name", trace_name(event.kind, event.micro_batch, chunks ? event.chunk : -1)},
          {"cat", compute ? "compute" : "communication"},
          {"pid", pid},
          {"tid", compute ? kComputeTrack : kCommunicationTrack},
          {"ts", 1e6 * (event.start_s - origin_s)},
          {"args", std::move(args)}};
      if (is_instant(event.kind)) {
        out["ph"] = "i";
        out["s"] = "t";  // drawn on its thread's track
      } else {
        out["ph"] = "X";
        out["dur"] = 1e6 * (event.end_s - event.start_s);
      }
      events.push_back(std::move(out));
    }
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"clock",
             "each rank's steady clock moved onto rank 0's by the offset of the "
             "ping-pong with the shortest round trip"},
            {"clock_offset_s", std::move(offsets)},
            {"clock_uncertainty_s", std::move(uncertainties)}}}};
}

}  // namespace mpipe::log
