// Causal attention kernel tests: oneDNN against the double-precision reference.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "expect_near.h"
#include "kernels/transformer_reference.h"
#include "support/bf16_cpu.h"

namespace mpipe::kernels {
namespace {

std::vector<float> random_values(int64_t n, uint32_t stream, float scale = 1.0f) {
  const CounterRng rng(13, RngPurpose::kData, 0x2B, stream);
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = scale * (2.0f * rng.uniform(i) - 1.0f);
  return out;
}

// Multipliers 0 or 1 / (1 - p), about a fraction p of zeros.
std::vector<float> random_mask(int64_t n, float p) {
  const CounterRng rng(13, RngPurpose::kDropout, 0x2B, 99);
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = rng.uniform(i) < p ? 0.0f : 1.0f / (1.0f - p);
  return out;
}

using testing::expect_near_all;

constexpr AttentionShape kShape{.batch = 2, .heads = 3, .seq = 7, .head_dim = 4};
constexpr int64_t kDataSize = 2 * 3 * 7 * 4, kProbsSize = 2 * 3 * 7 * 7;

struct Inputs {
  std::vector<float> q = random_values(kDataSize, 0, 2.0f);
  std::vector<float> k = random_values(kDataSize, 1, 2.0f);
  std::vector<float> v = random_values(kDataSize, 2);
  std::vector<float> dout = random_values(kDataSize, 3);
};

class AttentionKernel : public ::testing::TestWithParam<bool> {
 protected:
  // The dropout mask of this run, or nullptr when the parameter says no dropout.
  const float* mask() const { return GetParam() ? mask_.data() : nullptr; }
  std::vector<float> mask_ = random_mask(kProbsSize, 0.3f);
};

TEST_P(AttentionKernel, ForwardMatchesReference) {
  KernelContext ctx;
  const Inputs in;
  std::vector<float> probs(kProbsSize), out(kDataSize), probs_ref(kProbsSize), out_ref(kDataSize);
  causal_attention_forward(ctx, kShape, in.q.data(), in.k.data(), in.v.data(), mask(), probs.data(),
                           out.data());
  reference::causal_attention_forward(kShape, in.q.data(), in.k.data(), in.v.data(), mask(),
                                      probs_ref.data(), out_ref.data());
  expect_near_all(probs, probs_ref, 1e-5f, "probs");
  expect_near_all(out, out_ref, 1e-5f, "out");
}

TEST_P(AttentionKernel, BackwardMatchesReference) {
  KernelContext ctx;
  const Inputs in;
  std::vector<float> probs(kProbsSize), out(kDataSize);
  causal_attention_forward(ctx, kShape, in.q.data(), in.k.data(), in.v.data(), mask(), probs.data(),
                           out.data());
  std::vector<float> dq(kDataSize), dk(kDataSize), dv(kDataSize);
  std::vector<float> dq_ref(kDataSize), dk_ref(kDataSize), dv_ref(kDataSize);
  causal_attention_backward(ctx, kShape, in.q.data(), in.k.data(), in.v.data(), probs.data(),
                            mask(), in.dout.data(), dq.data(), dk.data(), dv.data());
  reference::causal_attention_backward(kShape, in.q.data(), in.k.data(), in.v.data(), mask(),
                                       in.dout.data(), dq_ref.data(), dk_ref.data(), dv_ref.data());
  expect_near_all(dq, dq_ref, 1e-4f, "dq");
  expect_near_all(dk, dk_ref, 1e-4f, "dk");
  expect_near_all(dv, dv_ref, 1e-4f, "dv");
}

// bf16: the four products read bf16-rounded operands (relative error 2^-8 each), scores and
// gradients of size about 1 pass through softmax, so outputs stay within a few 2^-8 of f32:
// tolerance 2^-5 relative to (1 + |reference|).
TEST_P(AttentionKernel, Bf16ForwardAndBackwardStayWithinBf16ToleranceOfReference) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  KernelContext ctx(Precision::kBf16);
  const Inputs in;
  std::vector<float> probs(kProbsSize), out(kDataSize), probs_ref(kProbsSize), out_ref(kDataSize);
  causal_attention_forward(ctx, kShape, in.q.data(), in.k.data(), in.v.data(), mask(), probs.data(),
                           out.data());
  reference::causal_attention_forward(kShape, in.q.data(), in.k.data(), in.v.data(), mask(),
                                      probs_ref.data(), out_ref.data());
  constexpr double kTolerance = 0x1p-5;
  expect_near_all(probs, probs_ref, kTolerance, "probs");
  expect_near_all(out, out_ref, kTolerance, "out");
  EXPECT_NE(out, out_ref);  // the products did round their operands
  std::vector<float> dq(kDataSize), dk(kDataSize), dv(kDataSize);
  std::vector<float> dq_ref(kDataSize), dk_ref(kDataSize), dv_ref(kDataSize);
  causal_attention_backward(ctx, kShape, in.q.data(), in.k.data(), in.v.data(), probs.data(),
                            mask(), in.dout.data(), dq.data(), dk.data(), dv.data());
  reference::causal_attention_backward(kShape, in.q.data(), in.k.data(), in.v.data(), mask(),
                                       in.dout.data(), dq_ref.data(), dk_ref.data(), dv_ref.data());
  expect_near_all(dq, dq_ref, kTolerance, "dq");
  expect_near_all(dk, dk_ref, kTolerance, "dk");
  expect_near_all(dv, dv_ref, kTolerance, "dv");
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutDropoutMask, AttentionKernel, ::testing::Bool());

TEST(AttentionKernelProbs, AreZeroAboveTheDiagonalAndRowsSumToOne) {
  KernelContext ctx;
  const Inputs in;
  std::vector<float> probs(kProbsSize), out(kDataSize);
  causal_attention_forward(ctx, kShape, in.q.data(), in.k.data(), in.v.data(), nullptr,
                           probs.data(), out.data());
  const int64_t T = kShape.seq;
  for (int64_t row = 0; row < kProbsSize / T; ++row) {
    const int64_t i = row % T;
    double sum = 0.0;
    for (int64_t j = 0; j < T; ++j) {
      const float p = probs[row * T + j];
      if (j > i) {
        EXPECT_EQ(p, 0.0f) << "row " << row << " col " << j;
      }
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << row;
  }
}

TEST(AttentionKernelReference, BackwardMatchesFiniteDifferences) {
  constexpr AttentionShape shape{.batch = 1, .heads = 2, .seq = 4, .head_dim = 3};
  constexpr int64_t n = 1 * 2 * 4 * 3;
  const auto q = random_values(n, 4), k = random_values(n, 5), v = random_values(n, 6);
  const auto dout = random_values(n, 7);
  const auto mask = random_mask(1 * 2 * 4 * 4, 0.25f);
  auto loss = [&](const std::vector<float>& qq, const std::vector<float>& kk,
                  const std::vector<float>& vv) {
    std::vector<float> probs(1 * 2 * 4 * 4), out(n);
    reference::causal_attention_forward(shape, qq.data(), kk.data(), vv.data(), mask.data(),
                                        probs.data(), out.data());
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(out[i]) * dout[i];
    return sum;
  };
  std::vector<float> dq(n), dk(n), dv(n);
  reference::causal_attention_backward(shape, q.data(), k.data(), v.data(), mask.data(),
                                       dout.data(), dq.data(), dk.data(), dv.data());
  constexpr float h = 1e-2f;
  for (int64_t i = 0; i < n; ++i) {
    auto qp = q, qm = q, kp = k, km = k, vp = v, vm = v;
    qp[i] += h, qm[i] -= h, kp[i] += h, km[i] -= h, vp[i] += h, vm[i] -= h;
    EXPECT_NEAR(dq[i], (loss(qp, k, v) - loss(qm, k, v)) / (2 * h), 2e-3) << "dq[" << i << "]";
    EXPECT_NEAR(dk[i], (loss(q, kp, v) - loss(q, km, v)) / (2 * h), 2e-3) << "dk[" << i << "]";
    EXPECT_NEAR(dv[i], (loss(q, k, vp) - loss(q, k, vm)) / (2 * h), 2e-3) << "dv[" << i << "]";
  }
}

}  // namespace
}  // namespace mpipe::kernels
