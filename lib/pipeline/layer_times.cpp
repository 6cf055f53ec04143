// Per-layer op times of the training steps, and their medians over a window of steps.
#include "pipeline/layer_times.h"

#include <time.h>

#include <algorithm>

namespace mpipe::pipeline {
namespace {

// The CPU time this thread has used so far.
std::chrono::nanoseconds thread_cpu_time() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

}  // namespace

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

LayerTimeScope::LayerTimeScope(LayerTimes* times, int global_layer)
    : times_(times), layer_(global_layer), start_(LayerTimes::Clock::now()) {
  if (times != nullptr && times->slowdown() > 1.0) cpu_start_ = thread_cpu_time();
}

LayerTimeScope::~LayerTimeScope() {
  if (times_ == nullptr || !times_->active()) return;
  auto now = LayerTimes::Clock::now();
  if (cpu_start_) {
    const auto until = now + std::chrono::duration_cast<LayerTimes::Clock::duration>(
                                 (thread_cpu_time() - *cpu_start_) * (times_->slowdown() - 1.0));
    while (now < until) now = LayerTimes::Clock::now();
  }
  times_->add(layer_, std::chrono::duration<double>(now - start_).count());
}

}  // namespace mpipe::pipeline
