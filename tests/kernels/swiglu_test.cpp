// SwiGLU gate kernel tests: forward and backward against the naive double reference.
#include "kernels/swiglu.h"

#include <gtest/gtest.h>

#include <vector>

#include "expect_near.h"
#include "kernels/transformer_reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::expect_near_all;
using testing::random_values;

constexpr int64_t kRows = 7, kHidden = 19;

TEST(SwigluKernel, ForwardMatchesReference) {
  const auto gate_up = random_values(kRows * 2 * kHidden, 1, -4.0f, 4.0f);
  std::vector<float> out(kRows * kHidden), expected(out.size());
  swiglu_forward(gate_up.data(), out.data(), kRows, kHidden);
  reference::swiglu_forward(gate_up.data(), expected.data(), kRows, kHidden);
  expect_near_all(out, expected, 1e-6, "out");
}

TEST(SwigluKernel, BackwardMatchesReference) {
  const auto gate_up = random_values(kRows * 2 * kHidden, 2, -4.0f, 4.0f);
  const auto dout = random_values(kRows * kHidden, 3);
  std::vector<float> dgate_up(gate_up.size(), 7.0f), expected(gate_up.size());
  swiglu_backward(gate_up.data(), dout.data(), dgate_up.data(), kRows, kHidden);
  reference::swiglu_backward(gate_up.data(), dout.data(), expected.data(), kRows, kHidden);
  expect_near_all(dgate_up, expected, 1e-6, "dgate_up");
}

}  // namespace
}  // namespace mpipe::kernels
