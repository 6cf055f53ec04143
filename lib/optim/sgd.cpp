// Sgd: g = grad + wd * p; buf = mu * buf + g; p -= lr * (nesterov ? g + mu * buf : buf).
#include "optim/sgd.h"

namespace mpipe::optim {

Sgd::Sgd(const OptimizerConfig& config, int64_t owned)
    : Optimizer(owned),
      momentum_(static_cast<float>(config.momentum)),
      nesterov_(config.nesterov),
      weight_decay_(static_cast<float>(config.weight_decay)) {
  if (momentum_ != 0.0f) momentum_buffer_ = Tensor(Shape({owned}));
}

std::vector<std::pair<std::string, std::span<float>>> Sgd::state() {
  if (momentum_buffer_.empty()) return {};
  return {{"momentum", momentum_buffer_.span()}};
}

void Sgd::update(std::span<float> params, std::span<const float> grads, double lr,
                 int64_t /*step_number*/, const DecaySegment& segment) {
  // PyTorch sets buf = g on the first step; with the buffer starting at zero, mu * 0 + g is the
  // same value, and a restored checkpoint needs no special case.
  const float rate = static_cast<float>(lr);
  const float wd = segment.decays ? weight_decay_ : 0.0f;
  const float mu = momentum_;
  const auto begin = static_cast<size_t>(segment.range.begin);
  const size_t n = static_cast<size_t>(segment.range.end) - begin;
  float* p = params.data() + begin;
  const float* g_in = grads.data() + begin;
  if (momentum_buffer_.empty()) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; ++i) p[i] -= rate * (g_in[i] + wd * p[i]);
    return;
  }
  float* buf = momentum_buffer_.data() + begin;
  if (nesterov_) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; ++i) {
      const float g = g_in[i] + wd * p[i];
      buf[i] = mu * buf[i] + g;
      p[i] -= rate * (g + mu * buf[i]);
    }
  } else {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; ++i) {
      const float g = g_in[i] + wd * p[i];
      buf[i] = mu * buf[i] + g;
      p[i] -= rate * buf[i];
    }
  }
}

}  // namespace mpipe::optim
