// Tests for TransformerBlock: gradients with dropout, micro-batch transparency, reproducible
// masks, parameter names and the flop count.
#include "nn/transformer_block.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "nn/param_buffer.h"
#include "split_backward_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape) {
  return testing::uniform_tensor(std::move(shape), CounterRng(41, RngPurpose::kData, 5, 0));
}

// Parameters of `layer` in a buffer: the layer's own initialization, then every value moved by
// U(-0.2, 0.2) so biases are non-zero and attention is not uniform.
struct RandomParams {
  explicit RandomParams(Layer& layer) : layers{&layer}, buffer(layers) {
    buffer.initialize(17);
    const CounterRng rng(42, RngPurpose::kInit, 5, 0);
    const std::span<float> values = buffer.values();
    for (size_t i = 0; i < values.size(); ++i) values[i] += 0.4f * (rng.uniform(i) - 0.5f);
  }
  Layer* layers[1];
  ParamBuffer buffer;
};

constexpr int64_t kSeq = 5, kDim = 8, kHeads = 2;

LayerContext training(kernels::KernelContext& kernels, int64_t first_example) {
  return {.kernels = kernels, .seed = 99, .step = 4, .first_example = first_example};
}

TEST(TransformerBlock, BackwardMatchesFiniteDifferencesWithDropoutMasksFixedByTheCounters) {
  kernels::KernelContext ctx;
  TransformerBlock layer(2, Shape{kSeq, kDim}, kHeads, 4, 0.2);
  testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
}

// The modern variant: RMS norms, a SwiGLU MLP and rotary position embeddings.
constexpr TransformerBlockVariant kModern{
    .norm = NormKind::kRmsNorm, .mlp = MlpKind::kSwiglu, .rotary = {.enabled = true, .base = 10.0}};

TEST(TransformerBlock, BackwardMatchesFiniteDifferencesWithRmsNormSwigluAndRotary) {
  kernels::KernelContext ctx;
  TransformerBlock layer(2, Shape{kSeq, kDim}, kHeads, 2, 0.2, kModern);
  testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
}

TEST(TransformerBlock, BackwardMatchesFiniteDifferencesForEachOptionAlone) {
  // The block of the first test, with one option changed at a time.
  kernels::KernelContext ctx;
  const TransformerBlockVariant variants[] = {
      {.norm = NormKind::kRmsNorm}, {.mlp = MlpKind::kSwiglu}, {.rotary = {.enabled = true}}};
  for (size_t i = 0; i < std::size(variants); ++i) {
    SCOPED_TRACE("variant " + std::to_string(i));
    TransformerBlock layer(2, Shape{kSeq, kDim}, kHeads, 4, 0.2, variants[i]);
    testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
  }
}

// Grouped-query attention in the modern block: 4 query heads over 2 key/value heads, and
// multi-query.
TEST(TransformerBlock, BackwardMatchesFiniteDifferencesWithGroupedQueryAttention) {
  kernels::KernelContext ctx;
  for (const int64_t kv_heads : {2, 1}) {
    SCOPED_TRACE(kv_heads);
    TransformerBlockVariant variant = kModern;
    variant.kv_heads = kv_heads;
    TransformerBlock layer(2, Shape{kSeq, kDim}, 4, 2, 0.2, variant);
    testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
  }
}

TEST(TransformerBlock, SwigluAndRmsNormNameTheirParamsAndSizeTheGateAndUpProjection) {
  const TransformerBlock layer(0, Shape{kSeq, kDim}, kHeads, 3, 0.0, kModern);
  std::vector<std::string> names;
  for (const ParamSpec& spec : layer.param_specs()) names.push_back(spec.name);
  const std::vector<std::string> expected = {
      "ln1.weight", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
      "ln2.weight", "mlp.fc1.weight",  "mlp.fc1.bias",  "mlp.fc2.weight",   "mlp.fc2.bias"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(layer.param_specs()[6].shape, Shape({2 * 3 * kDim, kDim}));  // gate, then up
  EXPECT_EQ(layer.param_specs()[8].shape, Shape({kDim, 3 * kDim}));      // down
  // fc1 2·5·8·48 and fc2 2·5·24·8 beside attention's, whose rotation adds 6·T·d.
  EXPECT_DOUBLE_EQ(layer.forward_flops_per_example(),
                   1920.0 + 800.0 + 640.0 + 240.0 + 3840.0 + 1920.0);
}

TEST(TransformerBlock, ResidualStdSetsTheInitOfTheOutputProjectionsOnly) {
  const TransformerBlock layer(0, Shape{kSeq, kDim}, kHeads, 4, 0.0, {.residual_std = 0.005f});
  for (const ParamSpec& spec : layer.param_specs()) {
    if (spec.init != Init::kNormal) continue;
    const bool residual = spec.name == "attn.proj.weight" || spec.name == "mlp.fc2.weight";
    EXPECT_EQ(spec.std, residual ? 0.005f : 0.02f) << spec.name;
  }
}

TEST(TransformerBlock, TwoMicroBatchesGiveTheFullBatchOutputRowByRowWithDropout) {
  kernels::KernelContext kernels;
  TransformerBlock layer(3, Shape{kSeq, kDim}, kHeads, 4, 0.3);
  RandomParams params(layer);
  const Tensor x = random_tensor({4, kSeq, kDim});
  const Tensor whole = layer.forward(x, training(kernels, 10)).output;
  const Tensor head = layer.forward(x.slice_rows(0, 1), training(kernels, 10)).output;
  const Tensor tail = layer.forward(x.slice_rows(1, 3), training(kernels, 11)).output;
  const int64_t row = kSeq * kDim;
  for (int64_t i = 0; i < head.numel(); ++i) ASSERT_NEAR(head[i], whole[i], 1e-5) << i;
  for (int64_t i = 0; i < tail.numel(); ++i) ASSERT_NEAR(tail[i], whole[row + i], 1e-5) << i;
  // Dropout is on: the same input in evaluation mode gives a different output.
  const Tensor eval = layer.forward(x, {.kernels = kernels, .training = false}).output;
  double difference = 0.0;
  for (int64_t i = 0; i < eval.numel(); ++i) difference += std::abs(eval[i] - whole[i]);
  EXPECT_GT(difference, 1e-2);
}

TEST(TransformerBlock, TwoMicroBatchesAccumulateTheFullBatchGradients) {
  kernels::KernelContext kernels;
  TransformerBlock layer(1, Shape{kSeq, kDim}, kHeads, 2, 0.3);
  RandomParams params(layer);
  const Tensor x = random_tensor({4, kSeq, kDim});
  Tensor dy = random_tensor({4, kSeq, kDim});
  for (int64_t i = 0; i < dy.numel(); ++i) dy[i] = 0.5f - dy[i];

  const LayerContext whole_ctx = training(kernels, 0);
  const Forward whole = layer.forward(x, whole_ctx);
  const Tensor dx = layer.backward(dy, whole.saved, whole_ctx);
  const std::vector<float> whole_grads(params.buffer.grads().begin(), params.buffer.grads().end());
  params.buffer.zero_grads();
  std::vector<float> split_dx;
  for (int64_t first : {0, 2}) {
    const LayerContext ctx = training(kernels, first);
    const Forward part = layer.forward(x.slice_rows(first, 2), ctx);
    const Tensor part_dx = layer.backward(dy.slice_rows(first, 2), part.saved, ctx);
    split_dx.insert(split_dx.end(), part_dx.span().begin(), part_dx.span().end());
  }
  const std::span<const float> split_grads = params.buffer.grads();
  for (size_t i = 0; i < whole_grads.size(); ++i) {
    ASSERT_NEAR(split_grads[i], whole_grads[i], 1e-4 * (1.0 + std::abs(whole_grads[i]))) << i;
  }
  for (int64_t i = 0; i < dx.numel(); ++i) ASSERT_NEAR(split_dx[i], dx[i], 1e-5) << i;
}

TEST(TransformerBlock, RecomputeReproducesTheOutputAndAnotherStepChangesTheMasks) {
  kernels::KernelContext kernels;
  TransformerBlock layer(0, Shape{kSeq, kDim}, kHeads, 4, 0.5);
  RandomParams params(layer);
  const Tensor x = random_tensor({2, kSeq, kDim});
  LayerContext ctx = training(kernels, 0);
  const Tensor first = layer.forward(x, ctx).output;
  ctx.recompute = true;
  const Tensor again = layer.forward(x, ctx).output;
  ctx.step += 1;
  const Tensor next_step = layer.forward(x, ctx).output;
  int64_t differ = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(again[i], first[i]) << i;
    differ += next_step[i] != first[i];
  }
  EXPECT_GT(differ, x.numel() / 2);
}

TEST(TransformerBlock, ParamsArePrefixedBySubLayerInOrder) {
  const TransformerBlock layer(0, Shape{kSeq, kDim}, kHeads, 3);
  std::vector<std::string> names;
  for (const ParamSpec& spec : layer.param_specs()) names.push_back(spec.name);
  const std::vector<std::string> expected = {"ln1.weight",    "ln1.bias",         "attn.qkv.weight",
                                             "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
                                             "ln2.weight",    "ln2.bias",         "mlp.fc1.weight",
                                             "mlp.fc1.bias",  "mlp.fc2.weight",   "mlp.fc2.bias"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(layer.param_specs()[8].shape, Shape({3 * kDim, kDim}));
  EXPECT_EQ(layer.param_specs()[10].shape, Shape({kDim, 3 * kDim}));
  EXPECT_EQ(layer.output_shape(), Shape({kSeq, kDim}));
}

TEST(TransformerBlock, ForwardFlopsCountEveryMatrixProduct) {
  const TransformerBlock layer(0, Shape{kSeq, kDim}, kHeads, 4);
  // qkv 2·5·8·24 + scores and probs·v 2·(2·5·5·8) + proj 2·5·8·8 + fc1 and fc2 2·(2·5·8·32).
  EXPECT_DOUBLE_EQ(layer.forward_flops_per_example(), 1920.0 + 800.0 + 640.0 + 5120.0);
}

TEST(TransformerBlock, GroupedQueryAttentionCountsTheSmallerKeysAndValues) {
  const TransformerBlock layer(0, Shape{kSeq, kDim}, 4, 4, 0.0, {.kv_heads = 1});
  // c = 1 · 8 / 4 = 2: qkv 2·5·8·(8 + 4) + scores and probs·v 2·(2·5·5·8) + proj 2·5·8·8 + fc1 and
  // fc2 2·(2·5·8·32).
  EXPECT_DOUBLE_EQ(layer.forward_flops_per_example(), 960.0 + 800.0 + 640.0 + 5120.0);
  EXPECT_EQ(layer.param_specs()[2].name, "attn.qkv.weight");
  EXPECT_EQ(layer.param_specs()[2].shape, Shape({12, kDim}));
  EXPECT_EQ(layer.param_specs()[3].shape, Shape({12}));
}

TEST(TransformerBlock, RejectsBadShapesAndSizes) {
  EXPECT_THROW(TransformerBlock(0, Shape{kDim}, kHeads), InputError);
  EXPECT_THROW(TransformerBlock(0, Shape{kSeq, kDim}, 3), InputError);
  EXPECT_THROW(TransformerBlock(0, Shape{kSeq, kDim}, kHeads, 0), InputError);
  EXPECT_THROW(TransformerBlock(0, Shape{kSeq, kDim}, kHeads, 4, -0.1), InputError);
  EXPECT_THROW(TransformerBlock(0, Shape{kSeq, kDim}, 4, 4, 0.0, {.kv_heads = 3}), InputError);
}

TEST(TransformerBlock, SplitBackwardGivesTheBitsOfBackward) {
  // GPT-2's block and the modern one, with and without dropout, as a middle and a first layer.
  kernels::KernelContext kernels;
  const TransformerBlockVariant variants[] = {{}, kModern};
  for (size_t v = 0; v < std::size(variants); ++v) {
    for (const double dropout : {0.0, 0.2}) {
      for (const bool need_input_grad : {true, false}) {
        SCOPED_TRACE("variant " + std::to_string(v) + ", dropout " + std::to_string(dropout) +
                     (need_input_grad ? "" : ", no input gradient"));
        TransformerBlock layer(2, Shape{kSeq, kDim}, kHeads, 2, dropout, variants[v]);
        testing::expect_split_backward_bit_identical(
            layer, {random_tensor({2, kSeq, kDim}), random_tensor({3, kSeq, kDim})}, kernels,
            need_input_grad);
      }
    }
  }
}

TEST(TransformerBlock, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  for (const TransformerBlockVariant& variant : {TransformerBlockVariant{}, kModern}) {
    testing::SplitBackwardOf<TransformerBlock> layer(2, Shape{kSeq, kDim}, kHeads, 2, 0.2, variant);
    testing::expect_gradients_match(layer, random_tensor({2, kSeq, kDim}), ctx);
  }
}

TEST(TransformerBlock, NeedsCountWhatBackwardInputKeepsForBackwardWeight) {
  // The bytes LayerNeeds states per example and per micro-batch, against the tensors that
  // backward_input leaves in Saved.
  kernels::KernelContext kernels;
  for (const TransformerBlockVariant& variant : {TransformerBlockVariant{}, kModern}) {
    for (const double dropout : {0.0, 0.2}) {
      SCOPED_TRACE("dropout " + std::to_string(dropout));
      TransformerBlock layer(2, Shape{kSeq, kDim}, kHeads, 2, dropout, variant);
      RandomParams params(layer);
      constexpr int64_t kBatch = 3;
      const Tensor x = random_tensor({kBatch, kSeq, kDim});
      Forward f = layer.forward(x, training(kernels, 0));
      (void)layer.backward_input(random_tensor(x.shape()), f.saved, training(kernels, 0));
      const LayerNeeds needs = layer.needs();
      EXPECT_TRUE(needs.splits_backward);
      ASSERT_EQ(f.saved.tensors.size(), needs.weight_work_tensor_bytes.size() +
                                            needs.weight_work_fixed_tensor_bytes.size());
      double stated = 0.0;
      for (double bytes : needs.weight_work_tensor_bytes) stated += kBatch * bytes;
      for (double bytes : needs.weight_work_fixed_tensor_bytes) stated += bytes;
      EXPECT_EQ(static_cast<double>(f.saved.bytes()), stated);
    }
  }
}

}  // namespace
}  // namespace mpipe::nn
