// Per-layer op times of the training steps, and their medians over a window of steps.
#include "pipeline/layer_times.h"

#include <algorithm>

namespace mpipe::pipeline {

void LayerTimes::end_step() {
  if (windowed_) window_.push_back(std::move(current_));
  current_.clear();
}

std::map<int, double> LayerTimes::take_window_medians() {
  std::map<int, std::vector<double>> per_layer;
  for (const auto& step : window_) {
    for (const auto& [layer, seconds] : step) per_layer[layer].push_back(seconds);
  }
  window_.clear();
  std::map<int, double> medians;
  for (auto& [layer, values] : per_layer) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    medians[layer] = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  }
  return medians;
}

LayerTimeScope::~LayerTimeScope() {
  if (times_ == nullptr || !times_->active()) return;
  auto now = LayerTimes::Clock::now();
  if (times_->slowdown() > 1.0) {
    const auto until = start_ + std::chrono::duration_cast<LayerTimes::Clock::duration>(
                                    (now - start_) * times_->slowdown());
    while (now < until) now = LayerTimes::Clock::now();
  }
  times_->add(layer_, std::chrono::duration<double>(now - start_).count());
}

}  // namespace mpipe::pipeline
