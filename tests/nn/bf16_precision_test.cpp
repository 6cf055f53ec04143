// Layers in bf16 precision against the same layers in f32: forward output, input gradient and
// parameter gradients agree within what bf16 operands allow (a finite-difference check is not
// meaningful at bf16's 8-bit resolution).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/param_buffer.h"
#include "nn/transformer_block.h"
#include "support/bf16_cpu.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(7, RngPurpose::kData, 3, stream));
}

// ||a - b|| / ||b||.
double relative_l2(std::span<const float> a, std::span<const float> b) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// Output, input gradient and parameter gradients of one forward and backward of `layer`.
struct Pass {
  std::vector<float> y, dx, grads;
};

Pass run(Layer& layer, ParamBuffer& params, kernels::Precision precision, const Tensor& x) {
  kernels::KernelContext kernels(precision);
  const LayerContext ctx{.kernels = kernels, .seed = 5, .step = 1};
  params.zero_grads();
  const Forward forward = layer.forward(x, ctx);
  const Tensor dy = random_tensor(forward.output.shape(), 99);
  const Tensor dx = layer.backward(dy, forward.saved, ctx);
  const auto g = params.grads();
  return {{forward.output.span().begin(), forward.output.span().end()},
          {dx.span().begin(), dx.span().end()},
          {g.begin(), g.end()}};
}

// Each product reads operands rounded to bf16 (relative error <= 2^-8); with f32 accumulation
// the rounding errors of a sum are independent, so a result's relative L2 error is about 2^-8
// per product in a chain (a Transformer block chains up to four): 2^-5 leaves room for that,
// and a kernel that lost f32 accumulation or rounded its output would exceed it. The error is
// also above zero: the layer did compute in bf16.
void expect_bf16_close_to_f32(Layer& layer, const Tensor& x) {
  Layer* layers[] = {&layer};
  ParamBuffer params(layers);
  params.initialize(3);
  const Pass f32 = run(layer, params, kernels::Precision::kF32, x);
  const Pass bf16 = run(layer, params, kernels::Precision::kBf16, x);
  constexpr double kTolerance = 0x1p-5;
  for (auto [what, a, b] : {std::tuple{"y", &bf16.y, &f32.y}, std::tuple{"dx", &bf16.dx, &f32.dx},
                            std::tuple{"grads", &bf16.grads, &f32.grads}}) {
    const double error = relative_l2(*a, *b);
    EXPECT_LT(error, kTolerance) << what;
    EXPECT_GT(error, 0.0) << what;
  }
}

TEST(Bf16Precision, LinearForwardAndBackwardStayCloseToF32) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  Linear layer(0, Shape{256}, 128);
  expect_bf16_close_to_f32(layer, random_tensor({32, 256}, 1));
}

TEST(Bf16Precision, Conv2dForwardAndBackwardStayCloseToF32) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  Conv2d layer(0, Shape{8, 10, 10}, 16, 3, 1, 1);
  expect_bf16_close_to_f32(layer, random_tensor({4, 8, 10, 10}, 2));
}

TEST(Bf16Precision, TransformerBlockForwardAndBackwardStayCloseToF32) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  TransformerBlock layer(0, Shape{16, 64}, 4, 4, 0.1);
  expect_bf16_close_to_f32(layer, random_tensor({4, 16, 64}, 3));
}

}  // namespace
}  // namespace mpipe::nn
