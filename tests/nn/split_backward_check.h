// Split-backward checks for layers: backward_input then backward_weight (the I and W ops of the
// zero-bubble schedules) give the bits of backward, and match finite differences.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "gradient_check.h"
#include "kernels/context.h"
#include "nn/layer.h"

namespace mpipe::testing {

namespace detail {

inline bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

}  // namespace detail

// Runs `inputs.size()` micro-batches through `layer` twice from zeroed gradients: forward then
// backward per micro-batch; and every forward, every backward_input (descending micro-batch
// order, as a pipeline may), then backward_weight in ascending micro-batch order. Expects the
// layer to split its backward, and the input gradients and every parameter gradient of the two
// runs to be the same bits.
inline void expect_split_backward_bit_identical(nn::Layer& layer, const std::vector<Tensor>& inputs,
                                                kernels::KernelContext& kernels,
                                                bool need_input_grad = true, uint64_t seed = 7) {
  ASSERT_TRUE(layer.splits_backward());
  detail::GradientCheckStorage storage = detail::bind_with_test_values(layer, seed);
  const int micro_batches = static_cast<int>(inputs.size());
  auto context = [&](int m) {
    return nn::LayerContext{.kernels = kernels,
                            .seed = seed,
                            .step = 2,
                            .first_example = 3 * m,
                            .training = true,
                            .recompute = false,
                            .need_input_grad = need_input_grad,
                            .micro_batch = m,
                            .micro_batches = micro_batches};
  };
  std::vector<Tensor> output_grads;
  std::vector<Tensor> whole_dx;
  for (int m = 0; m < micro_batches; ++m) {
    nn::Forward f = layer.forward(inputs[static_cast<size_t>(m)], context(m));
    Tensor dy(f.output.shape());
    const CounterRng rng(seed, RngPurpose::kData, 0xD1, static_cast<uint32_t>(m));
    for (int64_t j = 0; j < dy.numel(); ++j) dy[j] = 2.0f * rng.uniform(j) - 1.0f;
    whole_dx.push_back(layer.backward(dy, f.saved, context(m)));
    output_grads.push_back(std::move(dy));
  }
  const std::vector<std::vector<float>> whole_grads = storage.grads;

  for (std::vector<float>& g : storage.grads) std::fill(g.begin(), g.end(), 0.0f);
  std::vector<nn::Saved> saved;
  for (int m = 0; m < micro_batches; ++m) {
    saved.push_back(layer.forward(inputs[static_cast<size_t>(m)], context(m)).saved);
  }
  for (int m = micro_batches; m-- > 0;) {
    const auto i = static_cast<size_t>(m);
    const Tensor dx = layer.backward_input(output_grads[i], saved[i], context(m));
    EXPECT_EQ(dx.shape(), whole_dx[i].shape()) << "micro-batch " << m;
    EXPECT_TRUE(detail::same_bits(dx.span(), whole_dx[i].span()))
        << "micro-batch " << m << ": backward_input's dx differs from backward's";
  }
  for (int m = 0; m < micro_batches; ++m) {
    const auto i = static_cast<size_t>(m);
    layer.backward_weight(output_grads[i], saved[i], context(m));
  }
  const std::vector<nn::ParamSpec> specs = layer.param_specs();
  for (size_t p = 0; p < specs.size(); ++p) {
    EXPECT_TRUE(detail::same_bits(storage.grads[p], whole_grads[p]))
        << "d" << specs[p].name << " after backward_weight differs from backward's";
  }
}

// Runs one training forward of `x` and backward_input, and expects the layer's LayerNeeds to state
// exactly the tensors backward_input leaves in Saved for backward_weight: their count, and their
// bytes at x's batch (weight_work_tensor_bytes per example, weight_work_fixed_tensor_bytes per
// micro-batch).
inline void expect_needs_count_weight_work(nn::Layer& layer, const Tensor& x,
                                           kernels::KernelContext& kernels, uint64_t seed = 7) {
  detail::GradientCheckStorage storage = detail::bind_with_test_values(layer, seed);
  const nn::LayerContext ctx{.kernels = kernels, .seed = seed};
  nn::Forward f = layer.forward(x, ctx);
  Tensor dy(f.output.shape());
  dy.fill(0.5f);
  (void)layer.backward_input(dy, f.saved, ctx);
  const nn::LayerNeeds needs = layer.needs();
  EXPECT_TRUE(needs.splits_backward);
  ASSERT_EQ(f.saved.tensors.size(),
            needs.weight_work_tensor_bytes.size() + needs.weight_work_fixed_tensor_bytes.size());
  const auto batch = static_cast<double>(x.dim(0));
  double stated = 0.0;
  for (double bytes : needs.weight_work_tensor_bytes) stated += batch * bytes;
  for (double bytes : needs.weight_work_fixed_tensor_bytes) stated += bytes;
  EXPECT_EQ(static_cast<double>(f.saved.bytes()), stated);
}

// A layer that runs its backward split: backward is backward_input then backward_weight.
template <class Base>
class SplitBackwardOf : public Base {
 public:
  using Base::Base;
  Tensor backward(const Tensor& dy, const nn::Saved& saved, const nn::LayerContext& ctx) override {
    nn::Saved left = saved;
    Tensor dx = Base::backward_input(dy, left, ctx);
    Base::backward_weight(dy, left, ctx);
    return dx;
  }
};

}  // namespace mpipe::testing
