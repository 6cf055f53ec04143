// Re-partitioning by measured layer times: the agreement, the partition search, the decision and
// its log line.
#include "train/measured_balance.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "comm/agree.h"
#include "core/byte_format.h"
#include "core/error.h"
#include "plan/partitioner.h"
#include "train/layer_move.h"
#include "train/pipeline_plan.h"

namespace mpipe::train {
namespace {

constexpr const char* kSlowRankVariable = "MPIPE_TEST_SLOW_RANK";

std::vector<int> layer_counts(const std::vector<plan::LayerRange>& ranges) {
  std::vector<int> counts;
  for (const plan::LayerRange& range : ranges) counts.push_back(range.size());
  return counts;
}

std::vector<plan::LayerRange> ranges_of(const plan::PipelinePlan& plan) {
  std::vector<plan::LayerRange> ranges;
  for (const plan::StagePlan& stage : plan.stages) ranges.push_back(stage.layers);
  return ranges;
}

}  // namespace

std::vector<double> distinct_speeds(const std::vector<double>& speeds) {
  if (speeds.empty()) return {};
  std::vector<double> sorted = speeds;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  std::vector<double> distinct = speeds;
  for (double& speed : distinct) {
    if (std::abs(speed / median - 1.0) < MeasuredBalance::kMinimumGain) speed = median;
  }
  return distinct;
}

void apply_test_slowdown(int world_rank, pipeline::LayerTimes& times) {
  const char* value = std::getenv(kSlowRankVariable);
  if (value == nullptr) return;
  const std::string text = value;
  std::vector<double> fields;
  size_t at = 0;
  bool valid = true;
  while (valid && at <= text.size()) {
    const size_t colon = std::min(text.find(':', at), text.size());
    try {
      size_t used = 0;
      fields.push_back(std::stod(text.substr(at, colon - at), &used));
      valid = used == colon - at;
    } catch (const std::exception&) {
      valid = false;
    }
    at = colon + 1;
  }
  valid = valid && (fields.size() == 2 || fields.size() == 4) && fields[0] >= 0 &&
          fields[1] >= 1.0 && (fields.size() == 2 || (fields[2] >= 1 && fields[3] >= fields[2]));
  check_input(valid,
              "{}={}: expected <world rank>:<factor >= 1>[:<first step>:<last step>], e.g. 1:2.5",
              kSlowRankVariable, text);
  if (static_cast<int>(fields[0]) != world_rank) return;
  const auto first = fields.size() == 4 ? static_cast<int64_t>(fields[2]) : int64_t{1};
  const auto last =
      fields.size() == 4 ? static_cast<int64_t>(fields[3]) : std::numeric_limits<int64_t>::max();
  times.set_slowdown(fields[1], first, last);
}

MeasuredBalance::MeasuredBalance(const config::Experiment& experiment, Trainer& trainer,
                                 const comm::Communicator& world)
    : experiment_(experiment),
      trainer_(trainer),
      world_(world),
      enabled_(experiment.pipeline.balance == plan::Balance::kMeasured &&
               trainer.topology().num_pipeline_ranks > 1),
      schedule_(experiment.pipeline.balance_after, experiment.pipeline.balance_every),
      moves_left_(experiment.pipeline.balance_moves) {
  comm::agree(world, [&] { apply_test_slowdown(world.rank(), trainer_.layer_times()); });
  trainer_.layer_times().set_windowed(enabled_);
  history_.push_back({{"step", 0},
                      {"partition", layer_counts(ranges_of(trainer.pipeline_plan()))},
                      {"by", "predicted"}});
  if (world.rank() == 0 && experiment.pipeline.balance == plan::Balance::kMeasured && !enabled_) {
    spdlog::info("pipeline.balance: measured has nothing to move with 1 pipeline rank");
  }
}

void MeasuredBalance::after_step(int64_t done) {
  if (!enabled_ || !schedule_.due(done)) return;
  rebalance(done);
  if (moves_left_ == 0) {
    enabled_ = false;
    trainer_.layer_times().set_windowed(false);
  }
}

std::vector<double> MeasuredBalance::agreed_layer_times() const {
  std::vector<double> mine;
  for (const auto& [layer, seconds] : trainer_.layer_times().take_window_medians()) {
    mine.push_back(static_cast<double>(layer));
    mine.push_back(seconds);
  }
  const std::vector<double> all = world_.allgatherv(mine);
  std::vector<double> per_layer(trainer_.plan().layers.size(), 0.0);
  for (size_t i = 0; i + 1 < all.size(); i += 2) {
    double& slot = per_layer[static_cast<size_t>(all[i])];
    slot = std::max(slot, all[i + 1]);
  }
  return per_layer;
}

std::string MeasuredBalance::move_over_memory_limit(const plan::PipelinePlan& from,
                                                    const plan::PipelinePlan& to) const {
  const int64_t limit = experiment_.pipeline.memory_limit;
  if (limit <= 0) return {};
  const std::vector<double> peak = move_peak_bytes(from, to, trainer_.placement(), trainer_.plan(),
                                                   optimizer_slots(experiment_.optimizer));
  const auto largest = std::max_element(peak.begin(), peak.end());
  if (*largest <= static_cast<double>(limit)) return {};
  return fmt::format(
      "moving needs {} on rank {} (its old and new layers' state at once), over "
      "pipeline.memory_limit {}",
      format_bytes(*largest), largest - peak.begin(), format_bytes(static_cast<double>(limit)));
}

void MeasuredBalance::rebalance(int64_t done) {
  const std::vector<double> measured = agreed_layer_times();
  const plan::PipelinePlan& current = trainer_.pipeline_plan();
  const plan::Placement& placement = trainer_.placement();
  const std::vector<plan::LayerRange> from = ranges_of(current);
  // Each rank's speed: its chunks' measured compute over the planner's prediction for them (1
  // when either is zero). A layer's time on another rank is scaled by the two ranks' speeds.
  std::vector<double> measured_total(static_cast<size_t>(placement.num_ranks), 0.0);
  std::vector<double> predicted_total(static_cast<size_t>(placement.num_ranks), 0.0);
  for (size_t s = 0; s < from.size(); ++s) {
    const auto rank = static_cast<size_t>(placement.rank_of(static_cast<int>(s)));
    for (int l = from[s].begin; l < from[s].end; ++l) {
      measured_total[rank] += measured[static_cast<size_t>(l)];
    }
    predicted_total[rank] += current.stages[s].compute_s;
  }
  std::vector<double> measured_speed(measured_total.size(), 1.0);
  for (size_t r = 0; r < measured_speed.size(); ++r) {
    if (measured_total[r] > 0.0 && predicted_total[r] > 0.0) {
      measured_speed[r] = measured_total[r] / predicted_total[r];
    }
  }
  std::vector<double> base(measured.size(), 0.0);  // per layer: measured / its rank's speed
  for (size_t s = 0; s < from.size(); ++s) {
    const double speed =
        measured_speed[static_cast<size_t>(placement.rank_of(static_cast<int>(s)))];
    for (int l = from[s].begin; l < from[s].end; ++l) {
      base[static_cast<size_t>(l)] = measured[static_cast<size_t>(l)] / speed;
    }
  }
  const std::vector<double> speed = distinct_speeds(measured_speed);
  std::vector<double> prefix(base.size() + 1, 0.0);
  for (size_t l = 0; l < base.size(); ++l) prefix[l + 1] = prefix[l] + base[l];
  const plan::StageCost cost = [&speed, &prefix, &placement](int begin, int end, int stage) {
    return speed[static_cast<size_t>(placement.rank_of(stage))] *
           (prefix[static_cast<size_t>(end)] - prefix[static_cast<size_t>(begin)]);
  };
  plan::PipelinePlan next =
      plan_measured(experiment_, trainer_.plan(), current, trainer_.topology().num_replicas, cost);
  const std::vector<plan::LayerRange> to = ranges_of(next);
  // The step goes at the pace of the slowest rank, which computes all its chunks.
  const double before_s = plan::largest_rank_cost(from, placement.ranks_of_stages(), cost);
  const double after_s = plan::largest_rank_cost(to, placement.ranks_of_stages(), cost);
  const double gain = before_s > 0.0 ? 1.0 - after_s / before_s : 0.0;
  const std::vector<int> from_counts = layer_counts(from);
  const std::vector<int> to_counts = layer_counts(to);
  std::string skipped;
  if (to == from) {
    skipped = "the measured times give the same partition";
  } else if (!next.fits()) {
    skipped = next.problem;
  } else if (gain < kMinimumGain) {
    skipped = fmt::format("a gain of {:.1f}% is under {:.0f}%", 100.0 * gain, 100.0 * kMinimumGain);
  } else {
    skipped = move_over_memory_limit(current, next);
  }
  const bool moved = skipped.empty();
  history_.push_back({{"step", done},
                      {"partition", moved ? to_counts : from_counts},
                      {"by", "measured"},
                      {"measured_partition", to_counts},
                      {"predicted_step_ms_before", 1e3 * before_s},
                      {"predicted_step_ms_after", 1e3 * after_s},
                      {"moved", moved}});
  if (moved) {
    trainer_.repartition(std::move(next));
    --moves_left_;
  }
  if (world_.rank() != 0) return;
  if (moved) {
    spdlog::info(
        "step {}: re-partitioned [{}] -> [{}] by measured time: predicted step {:.1f} -> "
        "{:.1f} ms",
        done, fmt::join(from_counts, ","), fmt::join(to_counts, ","), 1e3 * before_s,
        1e3 * after_s);
  } else {
    spdlog::info(
        "step {}: kept [{}] (measured time suggests [{}], predicted step {:.1f} -> {:.1f} "
        "ms): {}",
        done, fmt::join(from_counts, ","), fmt::join(to_counts, ","), 1e3 * before_s, 1e3 * after_s,
        skipped);
  }
}

}  // namespace mpipe::train
