// Optimizer: the factory and the checks shared by every kind.
#include "optim/optimizer.h"

#include <algorithm>

#include "core/error.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace mpipe::optim {

std::vector<DecaySegment> decay_segments(int64_t num_params, std::vector<ParamRange> exempt) {
  std::sort(exempt.begin(), exempt.end(),
            [](const ParamRange& a, const ParamRange& b) { return a.begin < b.begin; });
  std::vector<DecaySegment> segments;
  // Appends [begin, end) with `decays`, merged into the last segment when that one is alike.
  const auto append = [&segments](int64_t begin, int64_t end, bool decays) {
    if (begin >= end) return;
    if (!segments.empty() && segments.back().decays == decays) {
      segments.back().range.end = end;
    } else {
      segments.push_back({{begin, end}, decays});
    }
  };
  int64_t done = 0;  // [0, done) is covered
  for (const ParamRange& range : exempt) {
    check(0 <= range.begin && range.begin <= range.end && range.end <= num_params,
          "optimizer: decay-exempt range [{}, {}) is outside [0, {})", range.begin, range.end,
          num_params);
    append(done, range.begin, true);
    append(std::max(done, range.begin), range.end, false);
    done = std::max(done, range.end);
  }
  append(done, num_params, true);
  return segments;
}

std::unique_ptr<Optimizer> Optimizer::make(const OptimizerConfig& config, int64_t num_params,
                                           const std::vector<ParamRange>& decay_exempt,
                                           std::optional<ParamRange> owned) {
  check(num_params >= 0, "optimizer: num_params must be >= 0, got {}", num_params);
  const ParamRange mine = owned.value_or(ParamRange{0, num_params});
  check(0 <= mine.begin && mine.begin <= mine.end && mine.end <= num_params,
        "optimizer: owned parameters [{}, {}) are outside [0, {})", mine.begin, mine.end,
        num_params);
  const int64_t size = mine.end - mine.begin;
  std::unique_ptr<Optimizer> optimizer;
  switch (config.kind) {
    case OptimizerKind::kSgd:
      optimizer = std::make_unique<Sgd>(config, size);
      break;
    case OptimizerKind::kAdam:
      optimizer = std::make_unique<Adam>(config, size, /*decoupled_weight_decay=*/false);
      break;
    case OptimizerKind::kAdamW:
      optimizer = std::make_unique<Adam>(config, size, /*decoupled_weight_decay=*/true);
      break;
  }
  check(optimizer != nullptr, "optimizer: unknown kind");
  optimizer->num_params_ = num_params;
  optimizer->owned_ = mine;
  // The whole buffer's segments, clipped to the owned parameters and counted from the first.
  for (const DecaySegment& segment : decay_segments(num_params, decay_exempt)) {
    const int64_t begin = std::max(segment.range.begin, mine.begin);
    const int64_t end = std::min(segment.range.end, mine.end);
    if (begin < end) {
      optimizer->segments_.push_back({{begin - mine.begin, end - mine.begin}, segment.decays});
    }
  }
  return optimizer;
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, double lr) {
  const auto n = static_cast<size_t>(num_params_);
  check(params.size() == n && grads.size() == n,
        "optimizer: expected {} parameters and gradients, got {} and {}", n, params.size(),
        grads.size());
  const auto begin = static_cast<size_t>(owned_.begin);
  const auto size = static_cast<size_t>(owned_.end - owned_.begin);
  for (const DecaySegment& segment : segments_) {
    update(params.subspan(begin, size), grads.subspan(begin, size), lr, steps_taken_ + 1, segment);
  }
  ++steps_taken_;
}

void Optimizer::set_steps_taken(int64_t steps) {
  check(steps >= 0, "optimizer: steps taken must be >= 0, got {}", steps);
  steps_taken_ = steps;
}

}  // namespace mpipe::optim
