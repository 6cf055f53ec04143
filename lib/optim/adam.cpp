// Adam: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps).
#include "optim/adam.h"

#include <cmath>

namespace mpipe::optim {

Adam::Adam(const OptimizerConfig& config, int64_t owned, bool decoupled_weight_decay)
    : Optimizer(owned),
      beta1_(config.beta1),
      beta2_(config.beta2),
      eps_(config.eps),
      weight_decay_(config.weight_decay),
      decoupled_weight_decay_(decoupled_weight_decay),
      exp_avg_(Shape({owned})),
      exp_avg_sq_(Shape({owned})) {}

std::vector<std::pair<std::string, std::span<float>>> Adam::state() {
  return {{"exp_avg", exp_avg_.span()}, {"exp_avg_sq", exp_avg_sq_.span()}};
}

void Adam::update(std::span<float> params, std::span<const float> grads, double lr,
                  int64_t step_number, const DecaySegment& segment) {
  const double t = static_cast<double>(step_number);
  const double bias_correction1 = 1.0 - std::pow(beta1_, t);
  const double bias_correction2 = 1.0 - std::pow(beta2_, t);
  const float step_size = static_cast<float>(lr / bias_correction1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bias_correction2));
  const float b1 = static_cast<float>(beta1_);
  const float b2 = static_cast<float>(beta2_);
  const float one_minus_b1 = static_cast<float>(1.0 - beta1_);
  const float one_minus_b2 = static_cast<float>(1.0 - beta2_);
  const float eps = static_cast<float>(eps_);
  // AdamW: p *= 1 - lr * wd before the Adam step; Adam: g += wd * p.
  const double wd = segment.decays ? weight_decay_ : 0.0;
  const float decay = decoupled_weight_decay_ ? static_cast<float>(1.0 - lr * wd) : 1.0f;
  const float l2 = decoupled_weight_decay_ ? 0.0f : static_cast<float>(wd);
  const auto begin = static_cast<size_t>(segment.range.begin);
  const size_t n = static_cast<size_t>(segment.range.end) - begin;
  float* p = params.data() + begin;
  const float* g_in = grads.data() + begin;
  float* m = exp_avg_.data() + begin;
  float* v = exp_avg_sq_.data() + begin;
  // Element-wise, so the result does not depend on the number of threads.
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) {
    const float g = g_in[i] + l2 * p[i];
    m[i] = b1 * m[i] + one_minus_b1 * g;
    v[i] = b2 * v[i] + one_minus_b2 * g * g;
    const float denom = std::sqrt(v[i]) * inv_sqrt_bc2 + eps;
    p[i] = p[i] * decay - step_size * m[i] / denom;
  }
}

}  // namespace mpipe::optim
