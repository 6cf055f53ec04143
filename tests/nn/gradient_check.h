// Finite-difference gradient checker for layers: compares backward() with central differences.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "kernels/context.h"
#include "nn/layer.h"

namespace mpipe::testing {

struct GradientCheckOptions {
  double epsilon = 1e-2;    // central-difference step
  double tolerance = 2e-2;  // on |a - n| / max(1e-3, |a| + |n|)
  int max_checks = 64;      // sampled elements per tensor (all when the tensor is smaller)
  bool check_input = true;  // compare dx (false for layers whose input is not differentiable)
  uint64_t seed = 7;        // for r, the sampled elements, the parameter values and the layer
};

namespace detail {

// Parameter, gradient and buffer storage for one layer, one vector per spec.
struct GradientCheckStorage {
  std::vector<std::vector<float>> params, grads, buffers;
};

// Test-only initialization: random values of a sensible scale for every spec, so that biases
// and scales are non-trivial (a zero bias would hide a missing bias gradient).
inline void fill_for_check(std::vector<float>& values, const nn::ParamSpec& spec, uint64_t seed,
                           uint32_t stream) {
  CounterRng rng(seed, RngPurpose::kInit, 0xC0FFEE, stream);
  const double fan_in = spec.fan_in > 0 ? static_cast<double>(spec.fan_in) : 1.0;
  for (size_t i = 0; i < values.size(); ++i) {
    const float u = 2.0f * rng.uniform(i) - 1.0f;  // U(-1, 1)
    switch (spec.init) {
      case nn::Init::kZeros:
        values[i] = 0.1f * u;
        break;
      case nn::Init::kOnes:
        values[i] = 1.0f + 0.1f * u;
        break;
      case nn::Init::kNormal:
        values[i] = spec.std * rng.normal(i);
        break;
      default:
        values[i] = static_cast<float>(std::sqrt(3.0 / fan_in)) * u;
        break;
    }
  }
}

// Buffers hold state such as running statistics: initialized exactly as the spec says.
inline void fill_buffer(std::vector<float>& values, const nn::ParamSpec& spec) {
  std::fill(values.begin(), values.end(), spec.init == nn::Init::kOnes ? 1.0f : 0.0f);
}

inline std::vector<std::span<float>> spans(std::vector<std::vector<float>>& vectors) {
  std::vector<std::span<float>> out;
  for (auto& v : vectors) out.emplace_back(v);
  return out;
}

// loss = sum(output * r), in double.
inline double weighted_sum(const Tensor& output, const Tensor& r) {
  double loss = 0.0;
  for (int64_t j = 0; j < output.numel(); ++j) {
    loss += static_cast<double>(output[j]) * static_cast<double>(r[j]);
  }
  return loss;
}

// Up to max_checks distinct element indices in [0, numel), all of them when numel is small.
inline std::vector<int64_t> sample_indices(int64_t numel, int max_checks, uint64_t seed,
                                           uint32_t stream) {
  std::vector<int64_t> out;
  if (numel <= max_checks) {
    for (int64_t i = 0; i < numel; ++i) out.push_back(i);
    return out;
  }
  CounterRng rng(seed, RngPurpose::kData, 0xC0FFEE, stream);
  for (uint64_t draw = 0; static_cast<int>(out.size()) < max_checks; ++draw) {
    const int64_t i = static_cast<int64_t>(rng.bits(draw) % static_cast<uint64_t>(numel));
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A layer's parameters (test values), zeroed gradients and buffers, bound to it.
inline GradientCheckStorage bind_with_test_values(nn::Layer& layer, uint64_t seed) {
  GradientCheckStorage storage;
  const std::vector<nn::ParamSpec> param_specs = layer.param_specs();
  for (size_t p = 0; p < param_specs.size(); ++p) {
    const auto n = static_cast<size_t>(param_specs[p].shape.numel());
    storage.params.emplace_back(n);
    storage.grads.emplace_back(n, 0.0f);
    fill_for_check(storage.params.back(), param_specs[p], seed, static_cast<uint32_t>(p));
  }
  for (const nn::ParamSpec& spec : layer.buffer_specs()) {
    storage.buffers.emplace_back(static_cast<size_t>(spec.shape.numel()));
    fill_buffer(storage.buffers.back(), spec);
  }
  layer.bind(spans(storage.params), spans(storage.grads), spans(storage.buffers));
  return storage;
}

inline void expect_close(double analytic, double numeric, double tolerance,
                         const std::string& tensor, int64_t element) {
  const double error =
      std::abs(analytic - numeric) / std::max(1e-3, std::abs(analytic) + std::abs(numeric));
  EXPECT_LE(error, tolerance) << tensor << "[" << element << "]: backward gives " << analytic
                              << ", finite differences give " << numeric;
}

}  // namespace detail

// Binds `layer` to freshly allocated storage (params initialized with random test values,
// buffers per their spec), runs forward(x) in training mode, takes loss = sum(output * r) for a
// fixed random r, runs backward(r), and compares dx and every parameter gradient (up to
// max_checks sampled elements each) with central differences of the loss computed in double.
// The perturbed forwards use the same LayerContext (same seed, step and first_example, so
// dropout masks repeat) with recompute = true (so batch norm leaves its running statistics
// alone). The storage is released on return: the layer must be re-bound before further use.
inline void expect_gradients_match(nn::Layer& layer, const Tensor& x, kernels::KernelContext& ctx,
                                   const GradientCheckOptions& options = {}) {
  detail::GradientCheckStorage storage = detail::bind_with_test_values(layer, options.seed);
  const std::vector<nn::ParamSpec> param_specs = layer.param_specs();

  nn::LayerContext first{.kernels = ctx,
                         .seed = options.seed,
                         .step = 3,
                         .first_example = 5,
                         .training = true,
                         .recompute = false,
                         .need_input_grad = options.check_input};
  nn::LayerContext again = first;
  again.recompute = true;

  nn::Forward forward = layer.forward(x, first);
  Tensor r(forward.output.shape());
  const CounterRng r_rng(options.seed, RngPurpose::kData, 0xC0FFEE, 0xFFFF);
  for (int64_t j = 0; j < r.numel(); ++j) r[j] = 2.0f * r_rng.uniform(j) - 1.0f;
  const Tensor dx = layer.backward(r, forward.saved, first);

  // Central difference of the loss with respect to one float, restored afterwards.
  auto numeric = [&](float& value, const Tensor& input) {
    const float original = value;
    value = static_cast<float>(original + options.epsilon);
    const double plus_delta = static_cast<double>(value) - original;
    const double plus = detail::weighted_sum(layer.forward(input, again).output, r);
    value = static_cast<float>(original - options.epsilon);
    const double minus_delta = original - static_cast<double>(value);
    const double minus = detail::weighted_sum(layer.forward(input, again).output, r);
    value = original;
    return (plus - minus) / (plus_delta + minus_delta);
  };

  if (options.check_input) {
    ASSERT_EQ(dx.shape(), x.shape()) << "dx has the wrong shape";
    Tensor perturbed = x;
    for (int64_t i : detail::sample_indices(x.numel(), options.max_checks, options.seed, 0)) {
      const double n = numeric(perturbed[i], perturbed);
      detail::expect_close(dx[i], n, options.tolerance, "dx", i);
    }
  }
  for (size_t p = 0; p < param_specs.size(); ++p) {
    std::vector<float>& values = storage.params[p];
    const auto indices =
        detail::sample_indices(static_cast<int64_t>(values.size()), options.max_checks,
                               options.seed, static_cast<uint32_t>(p + 1));
    for (int64_t i : indices) {
      const double n = numeric(values[static_cast<size_t>(i)], x);
      detail::expect_close(storage.grads[p][static_cast<size_t>(i)], n, options.tolerance,
                           "d" + param_specs[p].name, i);
    }
  }
}

// expect_gradients_match for a layer that reads values (Layer::num_reads): forward_reading(x,
// reads) and backward_reading(r), comparing dx, the gradient of each read that `differentiable`
// marks (the others, such as token ids, must come back empty) and every parameter gradient with
// central differences of the loss.
inline void expect_reading_gradients_match(nn::Layer& layer, const Tensor& x,
                                           const std::vector<Tensor>& reads,
                                           const std::vector<bool>& differentiable,
                                           kernels::KernelContext& ctx,
                                           const GradientCheckOptions& options = {}) {
  ASSERT_EQ(static_cast<int>(reads.size()), layer.num_reads());
  ASSERT_EQ(differentiable.size(), reads.size());
  detail::GradientCheckStorage storage = detail::bind_with_test_values(layer, options.seed);
  const std::vector<nn::ParamSpec> param_specs = layer.param_specs();
  nn::LayerContext first{.kernels = ctx,
                         .seed = options.seed,
                         .step = 3,
                         .first_example = 5,
                         .training = true,
                         .recompute = false,
                         .need_input_grad = options.check_input};
  nn::LayerContext again = first;
  again.recompute = true;

  // inputs[0] is x, then the reads; each perturbed in place.
  std::vector<Tensor> inputs = {x};
  inputs.insert(inputs.end(), reads.begin(), reads.end());
  const auto forward = [&](const nn::LayerContext& context) {
    std::vector<const Tensor*> pointers;
    for (size_t k = 1; k < inputs.size(); ++k) pointers.push_back(&inputs[k]);
    return layer.forward_reading(inputs[0], pointers, context);
  };
  nn::Forward f = forward(first);
  Tensor r(f.output.shape());
  const CounterRng r_rng(options.seed, RngPurpose::kData, 0xC0FFEE, 0xFFFF);
  for (int64_t j = 0; j < r.numel(); ++j) r[j] = 2.0f * r_rng.uniform(j) - 1.0f;
  const std::vector<Tensor> grads = layer.backward_reading(r, f.saved, first);
  ASSERT_EQ(grads.size(), inputs.size());

  const auto numeric = [&](float& value) {
    const float original = value;
    value = static_cast<float>(original + options.epsilon);
    const double plus_delta = static_cast<double>(value) - original;
    const double plus = detail::weighted_sum(forward(again).output, r);
    value = static_cast<float>(original - options.epsilon);
    const double minus_delta = original - static_cast<double>(value);
    const double minus = detail::weighted_sum(forward(again).output, r);
    value = original;
    return (plus - minus) / (plus_delta + minus_delta);
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string name = k == 0 ? "dx" : "dread" + std::to_string(k - 1);
    if (k == 0 ? !options.check_input : !differentiable[k - 1]) {
      EXPECT_TRUE(grads[k].empty()) << name << " should be empty";
      continue;
    }
    ASSERT_EQ(grads[k].shape(), inputs[k].shape()) << name << " has the wrong shape";
    const auto indices = detail::sample_indices(inputs[k].numel(), options.max_checks, options.seed,
                                                static_cast<uint32_t>(100 + k));
    for (int64_t i : indices) {
      detail::expect_close(grads[k][i], numeric(inputs[k][i]), options.tolerance, name, i);
    }
  }
  for (size_t p = 0; p < param_specs.size(); ++p) {
    std::vector<float>& values = storage.params[p];
    const auto indices =
        detail::sample_indices(static_cast<int64_t>(values.size()), options.max_checks,
                               options.seed, static_cast<uint32_t>(p + 1));
    for (int64_t i : indices) {
      detail::expect_close(storage.grads[p][static_cast<size_t>(i)],
                           numeric(values[static_cast<size_t>(i)]), options.tolerance,
                           "d" + param_specs[p].name, i);
    }
  }
}

}  // namespace mpipe::testing
