// RunTrace: the traced steps' switch, and the gather that merges the ranks' events.
#include "train/run_trace.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "comm/clock_offset.h"
#include "log/chrome_trace.h"

namespace mpipe::train {
namespace {

// Each rank's contribution to the gather: a header, its chunks' global stages, the number of
// events, then kEventFields per event.
constexpr size_t kHeaderFields = 5;  // world rank, replica, offset, uncertainty, chunks
// kind, micro-batch, step, start, end (on rank 0's clock), chunk, bytes
constexpr size_t kEventFields = 7;

double steady_seconds() { return log::TraceRecorder::seconds(log::TraceRecorder::Clock::now()); }

}  // namespace

RunTrace::RunTrace(std::vector<int64_t> steps, int64_t first_step, const comm::Communicator& world,
                   const comm::Topology& topology, const plan::Placement& placement,
                   log::TraceRecorder& recorder)
    : steps_(std::move(steps)), world_(world), topology_(topology), recorder_(recorder) {
  for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
    chunk_stages_.push_back(placement.stage_of(topology_.pipeline_rank, chunk));
  }
  if (steps_.empty()) return;
  if (steps_.back() <= first_step) {
    if (world_.rank() == 0) {
      spdlog::info(
          "log.trace_steps: no trace.json: this run starts after step {}, the last "
          "traced step",
          first_step);
    }
    steps_.clear();
    return;
  }
  const comm::ClockOffset offset = comm::measure_clock_offset(world_, steady_seconds);
  clock_offset_s_ = offset.offset_s;
  clock_uncertainty_s_ = offset.uncertainty_s;
}

void RunTrace::before_step(int64_t step) {
  const bool traced = std::binary_search(steps_.begin(), steps_.end(), step);
  recorder_.record_step(traced ? step : 0);
  recorded_ = recorded_ || traced;
}

bool RunTrace::due(int64_t done, bool stopping) const {
  return recorded_ && (stopping || done == steps_.back());
}

nlohmann::json RunTrace::merge() {
  recorder_.record_step(0);
  std::vector<double> mine = {static_cast<double>(world_.rank()),
                              static_cast<double>(topology_.replica), clock_offset_s_,
                              clock_uncertainty_s_, static_cast<double>(chunk_stages_.size())};
  for (const int stage : chunk_stages_) mine.push_back(static_cast<double>(stage));
  mine.push_back(static_cast<double>(recorder_.events().size()));
  for (const log::TraceEvent& event : recorder_.events()) {
    mine.insert(mine.end(),
                {static_cast<double>(event.kind), static_cast<double>(event.micro_batch),
                 static_cast<double>(event.step), event.start_s + clock_offset_s_,
                 event.end_s + clock_offset_s_, static_cast<double>(event.chunk),
                 static_cast<double>(event.bytes)});
  }
  recorder_.clear();
  recorded_ = false;
  const std::vector<double> all = world_.allgatherv(mine);
  if (world_.rank() != 0) return nullptr;
  std::vector<log::RankTimeline> ranks;
  for (size_t at = 0; at < all.size();) {
    log::RankTimeline rank{.world_rank = static_cast<int>(all[at]),
                           .replica = static_cast<int>(all[at + 1]),
                           .clock_offset_s = all[at + 2],
                           .clock_uncertainty_s = all[at + 3],
                           .chunk_stages = {},
                           .events = {}};
    const auto chunks = static_cast<size_t>(all[at + 4]);
    at += kHeaderFields;
    for (size_t c = 0; c < chunks; ++c) rank.chunk_stages.push_back(static_cast<int>(all[at + c]));
    const auto count = static_cast<size_t>(all[at + chunks]);
    at += chunks + 1;
    for (size_t i = 0; i < count; ++i, at += kEventFields) {
      rank.events.push_back({.kind = static_cast<log::TraceKind>(static_cast<int>(all[at])),
                             .micro_batch = static_cast<int>(all[at + 1]),
                             .step = static_cast<int64_t>(all[at + 2]),
                             .start_s = all[at + 3],
                             .end_s = all[at + 4],
                             .chunk = static_cast<int>(all[at + 5]),
                             .bytes = static_cast<int64_t>(all[at + 6])});
    }
    ranks.push_back(std::move(rank));
  }
  return log::chrome_trace(ranks);
}

}  // namespace mpipe::train
