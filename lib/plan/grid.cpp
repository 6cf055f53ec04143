// Text rendering of schedules: op strings, rank x time grids and the `mpipe schedule` report.
#include "plan/grid.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/counted.h"
#include "core/error.h"
#include "plan/schedule.h"

namespace mpipe::plan {

namespace {

// The label of the compute op covering the middle of column `column`, or "." if idle.
std::string cell_label(const RankTimeline& timeline, int column, bool with_chunk) {
  const double middle = column + 0.5;
  for (const TimedOp& timed : timeline.compute) {
    if (timed.start <= middle && middle < timed.end) return to_string(timed.op, with_chunk);
  }
  return ".";
}

}  // namespace

std::string program_to_string(const Program& program) {
  const bool with_chunk = has_chunks(program);
  std::vector<std::string> names;
  names.reserve(program.size());
  for (const Op& op : program) names.push_back(to_string(op, with_chunk));
  return fmt::format("{}", fmt::join(names, " "));
}

std::string render_grid(const SimulationResult& result) {
  const int num_columns = static_cast<int>(std::ceil(result.makespan));
  const bool with_chunk = result.virtual_stages > 1;
  const std::string row_name = with_chunk ? "rank " : "stage ";
  std::size_t width = fmt::format("{}", std::max(num_columns - 1, 0)).size();
  for (const RankTimeline& timeline : result.ranks) {
    for (const TimedOp& timed : timeline.compute) {
      width = std::max(width, to_string(timed.op, with_chunk).size());
    }
  }
  ++width;  // one space between cells
  const std::size_t rank_digits = fmt::format("{}", result.ranks.size() - 1).size();
  const std::size_t title_width = row_name.size() + rank_digits;

  std::string text = fmt::format("{:<{}}", "time", title_width);
  for (int c = 0; c < num_columns; ++c) text += fmt::format("{:>{}}", c, width);
  text += '\n';
  for (std::size_t r = 0; r < result.ranks.size(); ++r) {
    text += fmt::format("{}{:<{}}", row_name, r, rank_digits);
    for (int c = 0; c < num_columns; ++c) {
      text += fmt::format("{:>{}}", cell_label(result.ranks[r], c, with_chunk), width);
    }
    text += '\n';
  }
  return text;
}

std::string describe_schedule(ScheduleKind kind, int num_ranks, int num_micro_batches,
                              int virtual_stages) {
  std::vector<Program> programs;
  for (int r = 0; r < num_ranks; ++r) {
    programs.push_back(make_program(kind, num_ranks, num_micro_batches, r, virtual_stages));
  }
  SimulationOptions options;
  options.placement = placement_for(kind, num_ranks, virtual_stages).kind;
  const SimulationResult result = simulate(programs, options);
  check(!result.deadlocked(), "{} schedule: {}", to_string(kind), result.deadlock_report());
  check(result.orders_match(), "{} schedule: {}", to_string(kind),
        fmt::join(result.order_mismatches, "; "));

  std::vector<int> peaks, pending_weights;
  for (const RankTimeline& timeline : result.ranks) {
    peaks.push_back(timeline.peak_in_flight);
    pending_weights.push_back(timeline.peak_pending_weights);
  }
  const bool split = splits_backward(kind);
  const double gpipe_bound =
      static_cast<double>(num_ranks - 1) / (num_micro_batches + num_ranks - 1);
  const std::string costs =
      split ? fmt::format("F = {}, I = {} and W = {} time units (I + W = B = {})",
                          options.forward_time, options.backward_time - options.weight_time,
                          options.weight_time, options.backward_time)
            : fmt::format("F = {} and B = {} time units", options.forward_time,
                          options.backward_time);
  const bool chunked = virtual_stages > 1;
  const std::string placed =
      options.placement == PlacementKind::kV
          ? fmt::format(" in a V: chunk 0 of rank r is stage r, chunk 1 is stage {} - r",
                        2 * num_ranks - 1)
          : fmt::format(": chunk c of rank r is stage r + c*{}", num_ranks);
  std::string text =
      chunked
          ? fmt::format("{} schedule: {} of {} ({} stages{}), {}, {} per chunk\n\n",
                        to_string(kind), counted(num_ranks, "rank"),
                        counted(virtual_stages, "chunk"), num_ranks * virtual_stages, placed,
                        counted(num_micro_batches, "micro-batch", "micro-batches"), costs)
          : fmt::format("{} schedule: {}, {}, {}\n\n", to_string(kind), counted(num_ranks, "stage"),
                        counted(num_micro_batches, "micro-batch", "micro-batches"), costs);
  text += render_grid(result);
  if (chunked) text += "(F3.1: micro-batch 3's forward in chunk 1)\n";
  text += fmt::format("\nmakespan: {} time units\n", result.makespan);
  text += fmt::format("bubble fraction: {:.3f} (GPipe bound (K-1)/(M+K-1) = {:.3f}",
                      result.bubble_fraction, gpipe_bound);
  if (chunked) {
    text += fmt::format(
        "; with v chunks (K-1)/(v*M+K-1) = {:.3f}",
        static_cast<double>(num_ranks - 1) / (virtual_stages * num_micro_batches + num_ranks - 1));
  }
  text += ")\n";
  text +=
      fmt::format("peak in-flight micro-batches per {}: {}\n",
                  chunked ? "rank (a micro-batch once per chunk)" : "stage", fmt::join(peaks, " "));
  if (split) {
    text += fmt::format("peak micro-batches between I and W per stage: {}\n",
                        fmt::join(pending_weights, " "));
  }
  if (chunked) {
    // A rank's v chunks over v·M slots, with the same K - 1 slots of fill and drain.
    const double vm = static_cast<double>(virtual_stages) * num_micro_batches;
    text += fmt::format("ideal speedup over one rank: {:.2f}x (K*v*M/(v*M+K-1))\n",
                        num_ranks * vm / (vm + num_ranks - 1));
  } else {
    text += fmt::format("ideal speedup over one stage: {:.2f}x (K*M/(M+K-1))\n",
                        ideal_speedup(num_ranks, num_micro_batches));
  }
  return text;
}

double ideal_speedup(int num_stages, int num_micro_batches) {
  check(num_stages >= 1 && num_micro_batches >= 1,
        "ideal_speedup: stages and micro-batches must be >= 1, got {} and {}", num_stages,
        num_micro_batches);
  return static_cast<double>(num_stages) * num_micro_batches / (num_micro_batches + num_stages - 1);
}

}  // namespace mpipe::plan
