// SwiGLU gate kernel tests: forward and backward against the naive double reference.
#include "kernels/swiglu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
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

// The same rows placed 0 to 15 floats further on (every alignment of a row's start to the vector
// width) give every element the same bits: an element's result depends on its inputs alone, not
// on where its row starts or on how many rows a micro-batch has (bit-identity across K).
TEST(SwigluKernel, GivesEveryElementTheSameBitsAtAnyAddress) {
  const auto values = random_values(kRows * 2 * kHidden, 4, -8.0f, 8.0f);
  const auto dout_values = random_values(kRows * kHidden, 5);
  std::vector<float> first_out, first_dgate_up;
  for (int64_t shift = 0; shift < 16; ++shift) {
    std::vector<float> gate_up(shift + values.size()), dout(shift + dout_values.size());
    std::copy(values.begin(), values.end(), gate_up.begin() + shift);
    std::copy(dout_values.begin(), dout_values.end(), dout.begin() + shift);
    std::vector<float> out(shift + kRows * kHidden), dgate_up(gate_up.size());
    swiglu_forward(gate_up.data() + shift, out.data() + shift, kRows, kHidden);
    swiglu_backward(gate_up.data() + shift, dout.data() + shift, dgate_up.data() + shift, kRows,
                    kHidden);
    out.erase(out.begin(), out.begin() + shift);
    dgate_up.erase(dgate_up.begin(), dgate_up.begin() + shift);
    if (shift == 0) {
      first_out = out;
      first_dgate_up = dgate_up;
      continue;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(first_out[i]))
          << "out[" << i << "] shifted by " << shift;
    }
    for (size_t i = 0; i < dgate_up.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(dgate_up[i]), std::bit_cast<uint32_t>(first_dgate_up[i]))
          << "dgate_up[" << i << "] shifted by " << shift;
    }
  }
}

}  // namespace
}  // namespace mpipe::kernels
