// Tests for SelfAttention and the per-site dropout masks: reference composition, gradients,
// causality and mask reproducibility.
#include "nn/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "forward_consuming_check.h"
#include "gradient_check.h"
#include "kernels/reference.h"
#include "kernels/transformer_reference.h"
#include "nn/dropout.h"
#include "nn/param_buffer.h"
#include "split_backward_check.h"
#include "support/input_error_of.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream = 0) {
  return testing::uniform_tensor(std::move(shape), CounterRng(31, RngPurpose::kData, 4, stream));
}

// Parameters of `layer` in a buffer, every value U(-0.5, 0.5) so biases are non-zero.
struct RandomParams {
  explicit RandomParams(Layer& layer) : layers{&layer}, buffer(layers) {
    const CounterRng rng(32, RngPurpose::kInit, 4, 0);
    const std::span<float> values = buffer.values();
    for (size_t i = 0; i < values.size(); ++i) values[i] = rng.uniform(i) - 0.5f;
  }
  Layer* layers[1];
  ParamBuffer buffer;
};

constexpr int64_t kSeq = 5, kDim = 8, kHeads = 2;

// Token ids [2, T] for key padding with pad id 0: example 0 pads positions 1 and 3, example 1
// its first two.
Tensor padded_ids() {
  return Tensor(Shape{2, kSeq}, std::vector<float>{4, 0, 7, 0, 2, 0, 0, 5, 9, 3});
}

// The layer's evaluation forward against the reference kernels composed by hand, with rotary
// position embeddings on q and k when `rotary` asks for them, causal or not, and with keys
// padded by `ids` (pad id 0) when given.
void expect_forward_matches_reference(RotaryOptions rotary, bool causal = true,
                                      const Tensor* ids = nullptr) {
  kernels::KernelContext kernels;
  SelfAttention layer(0, Shape{kSeq, kDim}, kHeads, 0.0, rotary, 0.02f, causal,
                      ids ? std::optional<KeyPadding>(KeyPadding{}) : std::nullopt);
  RandomParams params(layer);
  const Tensor x = random_tensor({2, kSeq, kDim});
  const LayerContext ctx{.kernels = kernels, .training = false};
  const Tensor* reads[] = {ids};
  const Tensor y = ids ? layer.forward_reading(x, reads, ctx).output : layer.forward(x, ctx).output;

  auto param = [&](size_t index) {
    return params.buffer.values().data() + params.buffer.entries().at(index).offset;
  };
  const float *qkv_weight = param(0), *qkv_bias = param(1);
  const float *proj_weight = param(2), *proj_bias = param(3);
  constexpr int64_t rows = 2 * kSeq, hd = kDim / kHeads;
  std::vector<float> qkv(rows * 3 * kDim);
  kernels::reference::linear_forward(x.data(), qkv_weight, qkv_bias, qkv.data(), rows, kDim,
                                     3 * kDim);
  // q, k, v: [2, heads, T, hd] from columns [0, d), [d, 2d), [2d, 3d), head h at h * hd.
  std::vector<float> q(rows * kDim), k(rows * kDim), v(rows * kDim);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t t = 0; t < kSeq; ++t) {
        for (int64_t e = 0; e < hd; ++e) {
          const int64_t to = ((b * kHeads + h) * kSeq + t) * hd + e;
          const int64_t from = (b * kSeq + t) * 3 * kDim + h * hd + e;
          q[to] = qkv[from], k[to] = qkv[from + kDim], v[to] = qkv[from + 2 * kDim];
        }
      }
    }
  }
  if (rotary.enabled) {
    const std::vector<float> q_in = q, k_in = k;
    kernels::reference::rotary_apply(q_in.data(), q.data(), 2 * kHeads, kSeq, hd, rotary.base,
                                     false);
    kernels::reference::rotary_apply(k_in.data(), k.data(), 2 * kHeads, kSeq, hd, rotary.base,
                                     false);
  }
  std::vector<float> probs(2 * kHeads * kSeq * kSeq), heads(rows * kDim), merged(rows * kDim);
  std::vector<uint8_t> keep(2 * kSeq);
  for (int64_t i = 0; ids && i < 2 * kSeq; ++i) keep[i] = (*ids)[i] != 0.0f;
  kernels::reference::attention_forward(
      {.batch = 2, .heads = kHeads, .q_len = kSeq, .kv_len = kSeq, .head_dim = hd},
      {.causal = causal, .key_keep = ids ? keep.data() : nullptr}, q.data(), k.data(), v.data(),
      nullptr, probs.data(), heads.data());
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t t = 0; t < kSeq; ++t) {
        for (int64_t e = 0; e < hd; ++e) {
          merged[(b * kSeq + t) * kDim + h * hd + e] =
              heads[((b * kHeads + h) * kSeq + t) * hd + e];
        }
      }
    }
  }
  std::vector<float> expected(rows * kDim);
  kernels::reference::linear_forward(merged.data(), proj_weight, proj_bias, expected.data(), rows,
                                     kDim, kDim);
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-5) << i;
}

TEST(SelfAttention, ForwardMatchesTheReferenceProjectionsAndAttention) {
  expect_forward_matches_reference({});
}

TEST(SelfAttention, ForwardWithRotaryEmbeddingsMatchesTheReference) {
  // A small base turns the pairs by large angles within five positions.
  expect_forward_matches_reference({.enabled = true, .base = 10.0});
}

TEST(SelfAttention, ForwardWithoutTheCausalMaskMatchesTheReference) {
  expect_forward_matches_reference({}, /*causal=*/false);
}

TEST(SelfAttention, ForwardWithPaddedKeysMatchesTheReference) {
  const Tensor ids = padded_ids();
  expect_forward_matches_reference({}, /*causal=*/true, &ids);
  expect_forward_matches_reference({.enabled = true, .base = 10.0}, /*causal=*/false, &ids);
}

// Ids without the pad id: the reading form gives the plain layer's bits.
TEST(SelfAttention, TokenIdsWithoutPaddingGiveThePlainLayersBits) {
  kernels::KernelContext kernels;
  SelfAttention plain(2, Shape{kSeq, kDim}, kHeads, 0.3);
  SelfAttention reading(2, Shape{kSeq, kDim}, kHeads, 0.3, {}, 0.02f, true,
                        KeyPadding{.pad_id = 6});
  RandomParams plain_params(plain), reading_params(reading);
  const LayerContext ctx{.kernels = kernels, .seed = 4, .step = 1};
  const Tensor x = random_tensor({2, kSeq, kDim});
  const Tensor ids = padded_ids();
  const Tensor* reads[] = {&ids};
  const Forward a = plain.forward(x, ctx), b = reading.forward_reading(x, reads, ctx);
  ASSERT_EQ(a.output.shape(), b.output.shape());
  for (int64_t i = 0; i < a.output.numel(); ++i) ASSERT_EQ(a.output[i], b.output[i]) << i;
  ASSERT_EQ(a.saved.bytes(), b.saved.bytes());
  const std::vector<Tensor> grads = reading.backward_reading(x, b.saved, ctx);
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_TRUE(grads[1].empty());  // token ids take no gradient
  const Tensor dx = plain.backward(x, a.saved, ctx);
  for (int64_t i = 0; i < dx.numel(); ++i) ASSERT_EQ(dx[i], grads[0][i]) << i;
}

// Padded keys, an example whose keys are all padding and one whose first queries see no key:
// dx and every parameter gradient against central differences, causal or not, with dropout.
TEST(SelfAttention, WithPaddedKeysBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  const Tensor ids(Shape{3, kSeq}, std::vector<float>{4, 1, 7, 1, 2, 1, 1, 1, 1, 1, 1, 1, 5, 9, 3});
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    SelfAttention layer(3, Shape{kSeq, kDim}, kHeads, 0.2, {}, 0.02f, causal,
                        KeyPadding{.pad_id = 1});
    testing::expect_reading_gradients_match(layer, random_tensor({3, kSeq, kDim}), {ids}, {false},
                                            ctx);
  }
}

// A padded position's value reaches no other position's output.
TEST(SelfAttention, APaddedKeyDoesNotReachTheOtherPositions) {
  kernels::KernelContext kernels;
  SelfAttention layer(0, Shape{kSeq, kDim}, kHeads, 0.0, {}, 0.02f, /*causal=*/false, KeyPadding{});
  RandomParams params(layer);
  const LayerContext ctx{.kernels = kernels, .training = false};
  const Tensor ids = padded_ids();  // example 0 pads positions 1 and 3
  const Tensor* reads[] = {&ids};
  const Tensor x = random_tensor({2, kSeq, kDim});
  Tensor changed = x;
  for (int64_t j = 0; j < kDim; ++j) changed[1 * kDim + j] += 3.0f;
  const Tensor y = layer.forward_reading(x, reads, ctx).output;
  const Tensor y_changed = layer.forward_reading(changed, reads, ctx).output;
  for (int64_t t = 0; t < kSeq; ++t) {
    for (int64_t j = 0; j < kDim; ++j) {
      const int64_t at = t * kDim + j;
      if (t != 1) {
        ASSERT_EQ(y_changed[at], y[at]) << "position " << t;
      }
    }
  }
}

TEST(SelfAttention, RotaryEmbeddingsChangeTheOutputAfterTheFirstPosition) {
  // Position 0 is not rotated; the later ones are (their scores change with relative position).
  kernels::KernelContext kernels;
  SelfAttention plain(0, Shape{kSeq, kDim}, kHeads);
  SelfAttention rotary(0, Shape{kSeq, kDim}, kHeads, 0.0, {.enabled = true});
  RandomParams plain_params(plain), rotary_params(rotary);
  const Tensor x = random_tensor({1, kSeq, kDim});
  const Tensor a = plain.forward(x, {.kernels = kernels, .training = false}).output;
  const Tensor b = rotary.forward(x, {.kernels = kernels, .training = false}).output;
  for (int64_t j = 0; j < kDim; ++j) EXPECT_FLOAT_EQ(a[j], b[j]) << j;
  double difference = 0.0;
  for (int64_t i = kDim; i < a.numel(); ++i) difference += std::abs(a[i] - b[i]);
  EXPECT_GT(difference, 1e-3);
}

TEST(SelfAttention, BackwardWithRotaryEmbeddingsMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  SelfAttention layer(1, Shape{kSeq, kDim}, kHeads, 0.2, {.enabled = true, .base = 10.0});
  testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
}

TEST(SelfAttention, ForwardConsumingKeepsTheInputItIsHanded) {
  kernels::KernelContext kernels;
  SelfAttention layer(0, Shape{kSeq, kDim}, kHeads, 0.3);
  testing::expect_forward_consuming_keeps_input(layer, random_tensor({2, kSeq, kDim}), kernels);
}

TEST(SelfAttention, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  SelfAttention layer(0, Shape{kSeq, kDim}, kHeads);
  testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
}

TEST(SelfAttention, BackwardMatchesFiniteDifferencesWithDropoutOnTheProbabilities) {
  kernels::KernelContext ctx;
  SelfAttention layer(4, Shape{kSeq, kDim}, kHeads, 0.3);
  testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
}

TEST(SelfAttention, OutputAtPositionIDoesNotDependOnLaterTokens) {
  kernels::KernelContext kernels;
  SelfAttention layer(0, Shape{kSeq, kDim}, kHeads);
  RandomParams params(layer);
  const LayerContext ctx{.kernels = kernels, .training = false};
  const Tensor x = random_tensor({2, kSeq, kDim});
  const Tensor y = layer.forward(x, ctx).output;
  for (int64_t i = 0; i + 1 < kSeq; ++i) {
    Tensor changed = x;
    const Tensor noise = random_tensor({2, kSeq, kDim}, 1 + static_cast<uint64_t>(i));
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t t = i + 1; t < kSeq; ++t) {
        for (int64_t j = 0; j < kDim; ++j) changed[(b * kSeq + t) * kDim + j] += noise[j];
      }
    }
    const Tensor y_changed = layer.forward(changed, ctx).output;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t t = 0; t < kSeq; ++t) {
        for (int64_t j = 0; j < kDim; ++j) {
          const int64_t at = (b * kSeq + t) * kDim + j;
          if (t <= i) {
            ASSERT_EQ(y_changed[at], y[at]) << "position " << t << " after changing > " << i;
          } else {
            ASSERT_NE(y_changed[at], y[at]) << "position " << t << " after changing > " << i;
          }
        }
      }
    }
  }
}

TEST(SelfAttention, RejectsBadShapesHeadsAndRates) {
  EXPECT_THROW(SelfAttention(0, Shape{kSeq, kDim}, 3), InputError);
  EXPECT_THROW(SelfAttention(0, Shape{kDim}, 2), InputError);
  EXPECT_THROW(SelfAttention(0, Shape{kSeq, kDim}, 2, 1.0), InputError);
  EXPECT_THROW(
      SelfAttention(0, Shape{kSeq, kDim}, 2, 0.0, {}, 0.02f, true, KeyPadding{.pad_id = -1}),
      InputError);
  const SelfAttention layer(0, Shape{kSeq, kDim}, 4);
  const auto specs = layer.param_specs();
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].name, "qkv.weight");
  EXPECT_EQ(specs[0].shape, Shape({3 * kDim, kDim}));
  EXPECT_EQ(specs[1].name, "qkv.bias");
  EXPECT_EQ(specs[2].name, "proj.weight");
  EXPECT_EQ(specs[3].name, "proj.bias");
}

TEST(SelfAttention, RejectsKeyValueHeadsThatDoNotDivideTheHeads) {
  EXPECT_EQ(testing::input_error_of([] {
              SelfAttention(0, Shape{kSeq, kDim}, 4, 0.0, {}, 0.02f, true, std::nullopt, 3);
            }),
            "attention kv_heads must divide heads = 4, got 3");
  EXPECT_EQ(testing::input_error_of([] {
              SelfAttention(0, Shape{kSeq, kDim}, 4, 0.0, {}, 0.02f, true, std::nullopt, -2);
            }),
            "attention kv_heads must divide heads = 4, got -2");
}

// Grouped-query attention: q/k/v rows of d + 2c with c = kv_heads · d / heads.
TEST(SelfAttention, GroupedQueryAttentionShrinksTheKeyAndValueRows) {
  const SelfAttention layer(0, Shape{kSeq, kDim}, 4, 0.0, {}, 0.02f, true, std::nullopt, 2);
  const auto specs = layer.param_specs();
  EXPECT_EQ(specs[0].shape, Shape({kDim + 2 * 4, kDim}));
  EXPECT_EQ(specs[1].shape, Shape({kDim + 2 * 4}));
  EXPECT_EQ(specs[2].shape, Shape({kDim, kDim}));
}

// kv_heads = 2 of 4 heads is 4-head attention whose k and v rows of heads 2g and 2g + 1 are
// both key/value head g's: the layout the docs give (query head h uses key/value head h / 2).
TEST(SelfAttention, GroupedQueryAttentionEqualsFullAttentionWithSharedKeyValueRows) {
  kernels::KernelContext kernels;
  constexpr int64_t heads = 4, kv_heads = 2, hd = kDim / heads, c = kv_heads * hd;
  SelfAttention grouped(0, Shape{kSeq, kDim}, heads, 0.0, {.enabled = true, .base = 10.0}, 0.02f,
                        true, std::nullopt, kv_heads);
  SelfAttention full(0, Shape{kSeq, kDim}, heads, 0.0, {.enabled = true, .base = 10.0});
  RandomParams grouped_params(grouped), full_params(full);
  auto param = [](RandomParams& p, size_t index) {
    return p.buffer.values().data() + p.buffer.entries().at(index).offset;
  };
  // Row r of the full layer's q/k/v weight and bias from the grouped layer's.
  auto grouped_row = [&](int64_t r) {
    if (r < kDim) return r;                                              // q
    const int64_t part = (r - kDim) / kDim, within = (r - kDim) % kDim;  // k (0) or v (1)
    const int64_t head = within / hd, e = within % hd;
    return kDim + part * c + head / (heads / kv_heads) * hd + e;
  };
  for (int64_t r = 0; r < 3 * kDim; ++r) {
    const int64_t from = grouped_row(r);
    std::copy_n(param(grouped_params, 0) + from * kDim, kDim, param(full_params, 0) + r * kDim);
    param(full_params, 1)[r] = param(grouped_params, 1)[from];
  }
  std::copy_n(param(grouped_params, 2), kDim * kDim + kDim, param(full_params, 2));
  const Tensor x = random_tensor({2, kSeq, kDim});
  const LayerContext ctx{.kernels = kernels, .training = false};
  const Tensor want = full.forward(x, ctx).output, got = grouped.forward(x, ctx).output;
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(SelfAttention, GroupedQueryAttentionBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  for (const int64_t kv_heads : {2, 1}) {
    SCOPED_TRACE(kv_heads);
    SelfAttention layer(1, Shape{kSeq, kDim}, 4, 0.2, {.enabled = true, .base = 10.0}, 0.02f, true,
                        std::nullopt, kv_heads);
    testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
  }
}

TEST(SelfAttention, GroupedQueryAttentionSplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  SelfAttention layer(1, Shape{kSeq, kDim}, 4, 0.2, {.enabled = true}, 0.02f, true, std::nullopt,
                      2);
  testing::expect_split_backward_bit_identical(
      layer, {random_tensor({2, kSeq, kDim}, 1), random_tensor({2, kSeq, kDim}, 2)}, kernels);
}

TEST(FillDropoutMask, GivesAGlobalExampleTheSameMaskWhateverTheMicroBatch) {
  kernels::KernelContext kernels;
  constexpr int64_t per_example = 40;
  const LayerContext whole{.kernels = kernels, .seed = 3, .step = 7, .first_example = 0};
  LayerContext tail = whole;
  tail.first_example = 2;
  std::vector<float> all(4 * per_example), part(2 * per_example);
  fill_dropout_mask(whole, 5, DropoutSite::kMlpOutput, 0.5, 4, per_example, all.data());
  fill_dropout_mask(tail, 5, DropoutSite::kMlpOutput, 0.5, 2, per_example, part.data());
  for (int64_t i = 0; i < 2 * per_example; ++i) ASSERT_EQ(part[i], all[2 * per_example + i]);
}

TEST(FillDropoutMask, SiteZeroDrawsTheMaskOfADropoutLayer) {
  kernels::KernelContext kernels;
  const LayerContext ctx{.kernels = kernels, .seed = 3, .step = 2, .first_example = 9};
  Dropout dropout(6, Shape{64}, 0.25);
  Tensor ones(Shape{3, 64});
  ones.fill(1.0f);
  const Tensor expected = dropout.forward(ones, ctx).output;
  std::vector<float> mask(3 * 64);
  fill_dropout_mask(ctx, 6, DropoutSite::kAttentionProbs, 0.25, 3, 64, mask.data());
  for (int64_t i = 0; i < 3 * 64; ++i) ASSERT_EQ(mask[i], expected[i]) << i;
}

TEST(FillDropoutMask, SitesDrawIndependentMasksWithAboutTheRateOfZeros) {
  kernels::KernelContext kernels;
  const LayerContext ctx{.kernels = kernels, .seed = 1, .step = 0, .first_example = 0};
  constexpr int64_t n = 4096;
  std::vector<float> a(n), b(n), c(n);
  fill_dropout_mask(ctx, 1, DropoutSite::kAttentionProbs, 0.5, 1, n, a.data());
  fill_dropout_mask(ctx, 1, DropoutSite::kAttentionOutput, 0.5, 1, n, b.data());
  fill_dropout_mask(ctx, 1, DropoutSite::kMlpOutput, 0.5, 1, n, c.data());
  int64_t zeros = 0, same_ab = 0, same_bc = 0;
  for (int64_t i = 0; i < n; ++i) {
    zeros += b[i] == 0.0f;
    same_ab += a[i] == b[i];
    same_bc += b[i] == c[i];
    ASSERT_TRUE(b[i] == 0.0f || b[i] == 2.0f) << i;
  }
  // Independent masks at rate 0.5 agree on about half the elements.
  EXPECT_NEAR(static_cast<double>(zeros) / n, 0.5, 0.05);
  EXPECT_NEAR(static_cast<double>(same_ab) / n, 0.5, 0.05);
  EXPECT_NEAR(static_cast<double>(same_bc) / n, 0.5, 0.05);
}

TEST(SelfAttention, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  SelfAttention layer(1, Shape{kSeq, kDim}, kHeads, 0.2, {.enabled = true});
  testing::expect_split_backward_bit_identical(
      layer, {random_tensor({2, kSeq, kDim}, 1), random_tensor({2, kSeq, kDim}, 2)}, kernels);
}

TEST(SelfAttention, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  testing::SplitBackwardOf<SelfAttention> layer(1, Shape{kSeq, kDim}, kHeads, 0.2);
  testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
}

}  // namespace
}  // namespace mpipe::nn
