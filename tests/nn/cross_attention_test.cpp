// Tests for CrossAttention: reference composition, gradients of the input, the memory and every
// parameter, key padding and its reads.
#include "nn/cross_attention.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "kernels/reference.h"
#include "kernels/transformer_reference.h"
#include "nn/param_buffer.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream = 0) {
  return testing::uniform_tensor(std::move(shape), CounterRng(41, RngPurpose::kData, 6, stream));
}

// Parameters of `layer` in a buffer, every value U(-0.5, 0.5) so biases are non-zero.
struct RandomParams {
  explicit RandomParams(Layer& layer) : layers{&layer}, buffer(layers) {
    const CounterRng rng(42, RngPurpose::kInit, 6, 0);
    const std::span<float> values = buffer.values();
    for (size_t i = 0; i < values.size(); ++i) values[i] = rng.uniform(i) - 0.5f;
  }
  const float* param(size_t index) const {
    return buffer.values().data() + buffer.entries().at(index).offset;
  }
  Layer* layers[1];
  ParamBuffer buffer;
};

// Queries T = 4, memory S = 5, d = 8, 2 heads.
constexpr int64_t kSeq = 4, kMemory = 5, kDim = 8, kHeads = 2, kHeadDim = kDim / kHeads;

// The memory's token ids [3, S] with pad id 1: example 0 pads positions 1 and 3, example 1 every
// position, example 2 none.
Tensor memory_ids() {
  return Tensor(Shape{3, kMemory}, std::vector<float>{4, 1, 7, 1, 2, 1, 1, 1, 1, 1, 6, 9, 3, 8, 2});
}

// rows [batch * len, stride], columns [offset, offset + d) → [batch, heads, len, head_dim].
std::vector<float> split_heads(const std::vector<float>& rows, int64_t batch, int64_t len,
                               int64_t stride, int64_t offset) {
  std::vector<float> heads(static_cast<size_t>(batch * len * kDim));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t t = 0; t < len; ++t) {
        for (int64_t e = 0; e < kHeadDim; ++e) {
          heads[((b * kHeads + h) * len + t) * kHeadDim + e] =
              rows[(b * len + t) * stride + offset + h * kHeadDim + e];
        }
      }
    }
  }
  return heads;
}

// The layer's evaluation forward against the reference kernels composed by hand.
TEST(CrossAttention, ForwardMatchesTheReferenceProjectionsAndAttention) {
  kernels::KernelContext kernels;
  CrossAttention layer(0, Shape{kSeq, kDim}, Shape{kMemory, kDim}, kHeads, 0.0, 0.02f,
                       KeyPadding{.pad_id = 1});
  RandomParams params(layer);
  constexpr int64_t batch = 3, rows = batch * kSeq, memory_rows = batch * kMemory;
  const Tensor x = random_tensor({batch, kSeq, kDim}, 0);
  const Tensor memory = random_tensor({batch, kMemory, kDim}, 1);
  const Tensor ids = memory_ids();
  const Tensor* reads[] = {&memory, &ids};
  const Tensor y = layer.forward_reading(x, reads, {.kernels = kernels, .training = false}).output;

  std::vector<float> q_rows(rows * kDim), kv_rows(memory_rows * 2 * kDim);
  kernels::reference::linear_forward(x.data(), params.param(0), params.param(1), q_rows.data(),
                                     rows, kDim, kDim);
  kernels::reference::linear_forward(memory.data(), params.param(2), params.param(3),
                                     kv_rows.data(), memory_rows, kDim, 2 * kDim);
  const std::vector<float> q = split_heads(q_rows, batch, kSeq, kDim, 0);
  const std::vector<float> k = split_heads(kv_rows, batch, kMemory, 2 * kDim, 0);
  const std::vector<float> v = split_heads(kv_rows, batch, kMemory, 2 * kDim, kDim);
  std::vector<uint8_t> keep(batch * kMemory);
  for (int64_t i = 0; i < batch * kMemory; ++i) keep[i] = ids[i] != 1.0f;
  std::vector<float> probs(batch * kHeads * kSeq * kMemory), heads(rows * kDim);
  kernels::reference::attention_forward(
      {.batch = batch, .heads = kHeads, .q_len = kSeq, .kv_len = kMemory, .head_dim = kHeadDim},
      {.key_keep = keep.data()}, q.data(), k.data(), v.data(), nullptr, probs.data(), heads.data());
  std::vector<float> merged(rows * kDim);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t t = 0; t < kSeq; ++t) {
        for (int64_t e = 0; e < kHeadDim; ++e) {
          merged[(b * kSeq + t) * kDim + h * kHeadDim + e] =
              heads[((b * kHeads + h) * kSeq + t) * kHeadDim + e];
        }
      }
    }
  }
  std::vector<float> expected(rows * kDim);
  kernels::reference::linear_forward(merged.data(), params.param(4), params.param(5),
                                     expected.data(), rows, kDim, kDim);
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-5) << i;
  // Example 1's memory is all padding: its queries attend to nothing, each output is proj.bias.
  for (int64_t t = 0; t < kSeq; ++t) {
    for (int64_t j = 0; j < kDim; ++j) {
      EXPECT_EQ(y[(kSeq + t) * kDim + j], params.param(5)[j]) << "position " << t;
    }
  }
}

// dx, dmemory and every parameter gradient against central differences, with padded keys, an
// example whose memory is all padding, and dropout on the probabilities.
TEST(CrossAttention, BackwardWithPaddedKeysMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  CrossAttention layer(3, Shape{kSeq, kDim}, Shape{kMemory, kDim}, kHeads, 0.2, 0.02f,
                       KeyPadding{.pad_id = 1});
  testing::expect_reading_gradients_match(layer, random_tensor({3, kSeq, kDim}, 0),
                                          {random_tensor({3, kMemory, kDim}, 1), memory_ids()},
                                          {true, false}, ctx);
}

TEST(CrossAttention, BackwardWithoutPaddingMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  CrossAttention layer(2, Shape{kSeq, kDim}, Shape{kMemory, kDim}, kHeads);
  testing::expect_reading_gradients_match(layer, random_tensor({2, kSeq, kDim}, 0),
                                          {random_tensor({2, kMemory, kDim}, 1)}, {true}, ctx);
}

// The model's first layer computes no dx; the memory's gradient it still does.
TEST(CrossAttention, WithoutAnInputGradientStillGivesTheMemorys) {
  kernels::KernelContext ctx;
  CrossAttention layer(0, Shape{kSeq, kDim}, Shape{kMemory, kDim}, kHeads);
  testing::expect_reading_gradients_match(layer, random_tensor({2, kSeq, kDim}, 0),
                                          {random_tensor({2, kMemory, kDim}, 1)}, {true}, ctx,
                                          {.check_input = false});
}

// A padded memory position's value changes no output at all, nor does its token id's value
// beyond being the pad id.
TEST(CrossAttention, APaddedMemoryPositionDoesNotChangeTheOutput) {
  kernels::KernelContext kernels;
  CrossAttention layer(0, Shape{kSeq, kDim}, Shape{kMemory, kDim}, kHeads, 0.0, 0.02f,
                       KeyPadding{.pad_id = 1});
  RandomParams params(layer);
  const LayerContext ctx{.kernels = kernels, .training = false};
  const Tensor x = random_tensor({3, kSeq, kDim}, 0);
  const Tensor memory = random_tensor({3, kMemory, kDim}, 1);
  const Tensor ids = memory_ids();
  Tensor changed = memory;  // example 0's position 3 and all of example 1
  for (int64_t j = 0; j < kDim; ++j) changed[3 * kDim + j] += 5.0f;
  for (int64_t i = kMemory * kDim; i < 2 * kMemory * kDim; ++i) changed[i] -= 2.0f;
  const Tensor* reads[] = {&memory, &ids};
  const Tensor* changed_reads[] = {&changed, &ids};
  const Tensor y = layer.forward_reading(x, reads, ctx).output;
  const Tensor y_changed = layer.forward_reading(x, changed_reads, ctx).output;
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y_changed[i], y[i]) << i;
  // An unpadded position does change it.
  changed = memory;
  for (int64_t j = 0; j < kDim; ++j) changed[2 * kDim + j] += 5.0f;
  EXPECT_NE(layer.forward_reading(x, changed_reads, ctx).output[0], y[0]);
}

TEST(CrossAttention, SavesWhatItStatesAndRefusesTheOneInputCalls) {
  kernels::KernelContext kernels;
  CrossAttention layer(1, Shape{kSeq, kDim}, Shape{kMemory, kDim}, kHeads, 0.1);
  RandomParams params(layer);
  const Tensor x = random_tensor({2, kSeq, kDim}, 0);
  const Tensor memory = random_tensor({2, kMemory, kDim}, 1);
  const Tensor* reads[] = {&memory};
  const Forward f = layer.forward_reading(x, reads, {.kernels = kernels});
  const LayerNeeds needs = layer.needs();
  ASSERT_EQ(f.saved.tensors.size(), needs.kept_tensor_bytes.size());
  for (size_t i = 0; i < f.saved.tensors.size(); ++i) {
    EXPECT_EQ(static_cast<double>(f.saved.tensors[i].bytes()), 2.0 * needs.kept_tensor_bytes[i])
        << "saved tensor " << i;
  }
  EXPECT_FALSE(needs.splits_backward);
  EXPECT_GT(layer.forward_flops_per_example(), 0.0);
  EXPECT_THROW(layer.forward(x, {.kernels = kernels}), Error);
  EXPECT_THROW(layer.backward(x, f.saved, {.kernels = kernels}), Error);
}

TEST(CrossAttention, RejectsBadShapesHeadsRatesAndPadIds) {
  EXPECT_THROW(CrossAttention(0, Shape{kSeq, kDim}, Shape{kMemory, kDim}, 3), InputError);
  EXPECT_THROW(CrossAttention(0, Shape{kSeq, kDim}, Shape{kMemory, 4}, 2), InputError);
  EXPECT_THROW(CrossAttention(0, Shape{kDim}, Shape{kMemory, kDim}, 2), InputError);
  EXPECT_THROW(CrossAttention(0, Shape{kSeq, kDim}, Shape{kMemory, kDim}, 2, 1.0), InputError);
  EXPECT_THROW(CrossAttention(0, Shape{kSeq, kDim}, Shape{kMemory, kDim}, 2, 0.0, 0.02f,
                              KeyPadding{.pad_id = -1}),
               InputError);
}

}  // namespace
}  // namespace mpipe::nn
