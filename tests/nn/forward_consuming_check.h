// Checks Layer::forward_consuming against forward for a layer that saves its input.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "core/tensor.h"
#include "nn/layer.h"
#include "nn/param_buffer.h"

namespace mpipe::testing {

// Binds `layer` to an initialized parameter buffer and runs a training forward of x both ways:
// forward_consuming must give the same output and saved values as forward, and keep the very
// tensor it was handed as the saved input (no copy).
inline void expect_forward_consuming_keeps_input(nn::Layer& layer, const Tensor& x,
                                                 kernels::KernelContext& kernels) {
  nn::Layer* layers[] = {&layer};
  nn::ParamBuffer buffer(layers);
  buffer.initialize(3);
  const nn::LayerContext ctx{.kernels = kernels};
  const nn::Forward copied = layer.forward(x, ctx);
  Tensor handed = x;
  const float* handed_data = handed.data();
  const nn::Forward consumed = layer.forward_consuming(std::move(handed), ctx);
  auto values = [](const Tensor& t) {
    return std::vector<float>(t.span().begin(), t.span().end());
  };
  EXPECT_EQ(values(consumed.output), values(copied.output));
  ASSERT_EQ(consumed.saved.tensors.size(), copied.saved.tensors.size());
  ASSERT_FALSE(consumed.saved.tensors.empty());
  EXPECT_EQ(consumed.saved.tensors[0].data(), handed_data);
  for (size_t i = 0; i < copied.saved.tensors.size(); ++i) {
    EXPECT_EQ(values(consumed.saved.tensors[i]), values(copied.saved.tensors[i])) << "saved " << i;
  }
}

}  // namespace mpipe::testing
