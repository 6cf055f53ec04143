// Attention kernel tests: oneDNN against the double-precision reference, causal or not, with key
// padding, queries and keys of different lengths, rows with no key and dropout.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
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

// One configuration of the kernel.
struct Case {
  std::string name;
  AttentionShape shape;
  bool causal = false;
  // Key padding: example 0 pads every third key from the second on; the last example pads every
  // key (not causal) or its first two (causal), so some of its rows see no key.
  bool key_padding = false;
};

std::vector<uint8_t> key_keep_of(const Case& c) {
  const AttentionShape& s = c.shape;
  std::vector<uint8_t> keep(static_cast<size_t>(s.batch * s.kv_len), 1);
  for (int64_t j = 0; j < s.kv_len; ++j) {
    keep[j] = j % 3 != 1;
    keep[(s.batch - 1) * s.kv_len + j] = c.causal && j >= 2;
  }
  return keep;
}

std::vector<Case> cases() {
  return {
      {"CausalSelf", {.batch = 2, .heads = 3, .q_len = 7, .kv_len = 7, .head_dim = 4}, true},
      {"Self", {.batch = 2, .heads = 3, .q_len = 7, .kv_len = 7, .head_dim = 4}},
      {"FewerQueries", {.batch = 2, .heads = 3, .q_len = 5, .kv_len = 7, .head_dim = 4}},
      {"MoreQueries", {.batch = 2, .heads = 2, .q_len = 6, .kv_len = 3, .head_dim = 5}},
      {"PaddedKeys", {.batch = 2, .heads = 3, .q_len = 5, .kv_len = 7, .head_dim = 4}, false, true},
      {"CausalPaddedKeys",
       {.batch = 2, .heads = 3, .q_len = 7, .kv_len = 7, .head_dim = 4},
       true,
       true},
      // Grouped-query attention: 2 query heads per key/value head, and one key/value head for
      // all (multi-query).
      {"CausalGroupedQueries",
       {.batch = 2, .heads = 4, .q_len = 7, .kv_len = 7, .head_dim = 4, .kv_heads = 2},
       true},
      {"MultiQueryPaddedKeys",
       {.batch = 2, .heads = 3, .q_len = 5, .kv_len = 7, .head_dim = 4, .kv_heads = 1},
       false,
       true},
  };
}

// Random q, k, v, dout, a dropout mask and the key padding of one case.
struct Inputs {
  explicit Inputs(const Case& c)
      : q(random_values(numel(c.shape, c.shape.q_len), 0, 2.0f)),
        k(random_values(kv_numel(c.shape), 1, 2.0f)),
        v(random_values(kv_numel(c.shape), 2)),
        dout(random_values(numel(c.shape, c.shape.q_len), 3)),
        dropout(random_mask(probs_size(c.shape), 0.3f)),
        keep(key_keep_of(c)),
        mask{.causal = c.causal, .key_keep = c.key_padding ? keep.data() : nullptr} {}
  static int64_t numel(const AttentionShape& s, int64_t len) {
    return s.batch * s.heads * len * s.head_dim;
  }
  static int64_t kv_numel(const AttentionShape& s) {
    return s.batch * kv_heads_of(s) * s.kv_len * s.head_dim;
  }
  static int64_t probs_size(const AttentionShape& s) {
    return s.batch * s.heads * s.q_len * s.kv_len;
  }
  std::vector<float> q, k, v, dout, dropout;
  std::vector<uint8_t> keep;
  AttentionMask mask;
};

// The outputs of one forward and backward, sized for a case.
struct Outputs {
  explicit Outputs(const AttentionShape& s)
      : probs(static_cast<size_t>(Inputs::probs_size(s))),
        out(static_cast<size_t>(Inputs::numel(s, s.q_len))),
        dq(out.size()),
        dk(static_cast<size_t>(Inputs::kv_numel(s))),
        dv(dk.size()) {}
  std::vector<float> probs, out, dq, dk, dv;
};

class AttentionKernel : public ::testing::TestWithParam<std::tuple<Case, bool>> {
 protected:
  const Case& c() const { return std::get<0>(GetParam()); }
  // The dropout mask of this run, or nullptr when the parameter says no dropout.
  const float* dropout() const { return std::get<1>(GetParam()) ? in_.dropout.data() : nullptr; }

  // The kernel's forward and backward in `precision`.
  Outputs kernel(Precision precision) const {
    KernelContext ctx(precision);
    Outputs o(c().shape);
    attention_forward(ctx, c().shape, in_.mask, in_.q.data(), in_.k.data(), in_.v.data(), dropout(),
                      o.probs.data(), o.out.data());
    attention_backward(ctx, c().shape, in_.q.data(), in_.k.data(), in_.v.data(), o.probs.data(),
                       dropout(), in_.dout.data(), o.dq.data(), o.dk.data(), o.dv.data());
    return o;
  }
  Outputs reference() const {
    Outputs o(c().shape);
    reference::attention_forward(c().shape, in_.mask, in_.q.data(), in_.k.data(), in_.v.data(),
                                 dropout(), o.probs.data(), o.out.data());
    reference::attention_backward(c().shape, in_.mask, in_.q.data(), in_.k.data(), in_.v.data(),
                                  dropout(), in_.dout.data(), o.dq.data(), o.dk.data(),
                                  o.dv.data());
    return o;
  }

  Inputs in_{c()};
};

TEST_P(AttentionKernel, ForwardMatchesReference) {
  const Outputs got = kernel(Precision::kF32), want = reference();
  expect_near_all(got.probs, want.probs, 1e-5f, "probs");
  expect_near_all(got.out, want.out, 1e-5f, "out");
}

TEST_P(AttentionKernel, BackwardMatchesReference) {
  const Outputs got = kernel(Precision::kF32), want = reference();
  expect_near_all(got.dq, want.dq, 1e-4f, "dq");
  expect_near_all(got.dk, want.dk, 1e-4f, "dk");
  expect_near_all(got.dv, want.dv, 1e-4f, "dv");
}

// bf16: the four products read bf16-rounded operands (relative error 2^-8 each), scores and
// gradients of size about 1 pass through softmax, so outputs stay within a few 2^-8 of f32:
// tolerance 2^-5 relative to (1 + |reference|).
TEST_P(AttentionKernel, Bf16ForwardAndBackwardStayWithinBf16ToleranceOfReference) {
  MPIPE_SKIP_WITHOUT_BF16_CPU();
  const Outputs got = kernel(Precision::kBf16), want = reference();
  constexpr double kTolerance = 0x1p-5;
  expect_near_all(got.probs, want.probs, kTolerance, "probs");
  expect_near_all(got.out, want.out, kTolerance, "out");
  EXPECT_NE(got.out, want.out);  // the products did round their operands
  expect_near_all(got.dq, want.dq, kTolerance, "dq");
  expect_near_all(got.dk, want.dk, kTolerance, "dk");
  expect_near_all(got.dv, want.dv, kTolerance, "dv");
}

// Every masked entry is 0; a row that sees a key sums to 1, one that sees none is all 0 (no
// NaN), and so are its output and the gradients that reach q from it.
TEST_P(AttentionKernel, MaskedEntriesAndRowsWithoutKeysAreZero) {
  const Outputs got = kernel(Precision::kF32);
  const AttentionShape& s = c().shape;
  const int64_t Tq = s.q_len, Tk = s.kv_len, D = s.head_dim;
  int64_t rows_without_keys = 0;
  for (int64_t row = 0; row < s.batch * s.heads * Tq; ++row) {
    const int64_t b = row / (s.heads * Tq), i = row % Tq;
    bool sees_a_key = false;
    double sum = 0.0;
    for (int64_t j = 0; j < Tk; ++j) {
      const bool visible = (!c().causal || j <= i) && (!c().key_padding || in_.keep[b * Tk + j]);
      const float p = got.probs[row * Tk + j];
      if (!visible) {
        ASSERT_EQ(p, 0.0f) << "row " << row << " key " << j;
      }
      sees_a_key |= visible;
      sum += p;
    }
    if (sees_a_key) {
      EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << row;
      continue;
    }
    ++rows_without_keys;
    for (int64_t e = 0; e < D; ++e) {
      ASSERT_EQ(got.out[row * D + e], 0.0f) << "row " << row;
      ASSERT_EQ(got.dq[row * D + e], 0.0f) << "row " << row;
    }
  }
  if (c().key_padding) {
    EXPECT_GT(rows_without_keys, 0);
  }
  for (const std::vector<float>* t : {&got.out, &got.dq, &got.dk, &got.dv}) {
    for (float x : *t) {
      ASSERT_TRUE(std::isfinite(x));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MasksAndLengths, AttentionKernel,
                         ::testing::Combine(::testing::ValuesIn(cases()), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<Case, bool>>& info) {
                           return std::get<0>(info.param).name +
                                  (std::get<1>(info.param) ? "WithDropout" : "");
                         });

TEST(AttentionKernel, RejectsACausalMaskOverSequencesOfDifferentLengths) {
  KernelContext ctx;
  constexpr AttentionShape shape{.batch = 1, .heads = 1, .q_len = 2, .kv_len = 3, .head_dim = 1};
  std::vector<float> q(2), kv(3), probs(6), out(2);
  EXPECT_THROW(attention_forward(ctx, shape, {.causal = true}, q.data(), kv.data(), kv.data(),
                                 nullptr, probs.data(), out.data()),
               Error);
}

TEST(AttentionKernel, RejectsKeyValueHeadsThatDoNotDivideTheHeads) {
  KernelContext ctx;
  constexpr AttentionShape shape{
      .batch = 1, .heads = 3, .q_len = 2, .kv_len = 2, .head_dim = 1, .kv_heads = 2};
  std::vector<float> q(6), kv(4), probs(12), out(6);
  EXPECT_THROW(attention_forward(ctx, shape, {}, q.data(), kv.data(), kv.data(), nullptr,
                                 probs.data(), out.data()),
               Error);
}

// The reference's backward against central differences of its forward, with `kv_heads` key/value
// heads for 2 query heads.
void expect_reference_backward_matches_finite_differences(int64_t kv_heads) {
  const AttentionShape shape{
      .batch = 2, .heads = 2, .q_len = 3, .kv_len = 4, .head_dim = 3, .kv_heads = kv_heads};
  const int64_t nq = 2 * 2 * 3 * 3, nk = 2 * kv_heads * 4 * 3;
  const auto q = random_values(nq, 4), k = random_values(nk, 5), v = random_values(nk, 6);
  const auto dout = random_values(nq, 7);
  const auto dropout = random_mask(2 * 2 * 3 * 4, 0.25f);
  const std::vector<uint8_t> keep = {1, 0, 1, 1, 0, 0, 0, 0};  // example 1: no key at all
  const AttentionMask mask{.key_keep = keep.data()};
  auto loss = [&](const std::vector<float>& qq, const std::vector<float>& kk,
                  const std::vector<float>& vv) {
    std::vector<float> probs(2 * 2 * 3 * 4), out(nq);
    reference::attention_forward(shape, mask, qq.data(), kk.data(), vv.data(), dropout.data(),
                                 probs.data(), out.data());
    double sum = 0.0;
    for (int64_t i = 0; i < nq; ++i) sum += double(out[i]) * dout[i];
    return sum;
  };
  std::vector<float> dq(nq), dk(nk), dv(nk);
  reference::attention_backward(shape, mask, q.data(), k.data(), v.data(), dropout.data(),
                                dout.data(), dq.data(), dk.data(), dv.data());
  constexpr float h = 1e-2f;
  for (int64_t i = 0; i < nq; ++i) {
    auto qp = q, qm = q;
    qp[i] += h, qm[i] -= h;
    EXPECT_NEAR(dq[i], (loss(qp, k, v) - loss(qm, k, v)) / (2 * h), 2e-3) << "dq[" << i << "]";
  }
  for (int64_t i = 0; i < nk; ++i) {
    auto kp = k, km = k, vp = v, vm = v;
    kp[i] += h, km[i] -= h, vp[i] += h, vm[i] -= h;
    EXPECT_NEAR(dk[i], (loss(q, kp, v) - loss(q, km, v)) / (2 * h), 2e-3) << "dk[" << i << "]";
    EXPECT_NEAR(dv[i], (loss(q, k, vp) - loss(q, k, vm)) / (2 * h), 2e-3) << "dv[" << i << "]";
  }
}

// The reference's gradients (which the kernel's are checked against) against central
// differences of its forward: queries and keys of different lengths, padded keys, a row with no
// key and dropout; 2 key/value heads, and 1 shared by both query heads.
TEST(AttentionKernelReference, BackwardMatchesFiniteDifferences) {
  for (const int64_t kv_heads : {2, 1}) {
    SCOPED_TRACE(kv_heads);
    expect_reference_backward_matches_finite_differences(kv_heads);
  }
}

}  // namespace
}  // namespace mpipe::kernels
