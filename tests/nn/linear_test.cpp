// Tests for the Linear layer: gradients, shapes, reference agreement and accumulation.
#include "nn/linear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "forward_consuming_check.h"
#include "gradient_check.h"
#include "kernels/reference.h"
#include "nn/param_buffer.h"
#include "split_backward_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(11, RngPurpose::kData, 3, stream));
}

// Sets every parameter gradient (not the alignment padding between them, which no layer writes).
void fill_gradients(ParamBuffer& buffer, float value) {
  for (const ParamBuffer::Entry& entry : buffer.entries()) {
    if (!entry.trainable) continue;
    std::fill_n(buffer.grads().data() + entry.offset, entry.shape.numel(), value);
  }
}

LayerContext training_context(kernels::KernelContext& kernels) {
  return LayerContext{.kernels = kernels};
}

TEST(Linear, BackwardMatchesFiniteDifferencesFor2DInput) {
  kernels::KernelContext ctx;
  Linear layer(0, Shape{5}, 4);
  testing::expect_gradients_match(layer, random_tensor({3, 5}, 1), ctx);
}

TEST(Linear, BackwardMatchesFiniteDifferencesFor3DInput) {
  kernels::KernelContext ctx;
  Linear layer(2, Shape{3, 6}, 4);
  testing::expect_gradients_match(layer, random_tensor({2, 3, 6}, 2), ctx);
}

TEST(Linear, BackwardMatchesFiniteDifferencesWithoutBias) {
  kernels::KernelContext ctx;
  Linear layer(0, Shape{7}, 3, /*bias=*/false);
  ASSERT_EQ(layer.param_specs().size(), 1u);
  testing::expect_gradients_match(layer, random_tensor({4, 7}, 3), ctx);
}

TEST(Linear, ReportsOutputShapeParamsAndFlops) {
  Linear layer(4, Shape{10, 32}, 8);
  EXPECT_EQ(layer.kind(), "linear");
  EXPECT_EQ(layer.output_shape(), Shape({10, 8}));
  const auto specs = layer.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "weight");
  EXPECT_EQ(specs[0].shape, Shape({8, 32}));
  EXPECT_EQ(specs[0].init, Init::kKaimingUniform);
  EXPECT_EQ(specs[0].fan_in, 32);
  EXPECT_EQ(specs[1].name, "bias");
  EXPECT_EQ(specs[1].shape, Shape({8}));
  EXPECT_DOUBLE_EQ(layer.forward_flops_per_example(), 10.0 * (2.0 * 32 * 8 + 8));
}

TEST(Linear, RejectsEmptyInputsAndZeroUnits) {
  EXPECT_THROW(Linear(0, Shape{}, 4), InputError);
  EXPECT_THROW(Linear(0, Shape{0}, 4), InputError);
  EXPECT_THROW(Linear(0, Shape{4}, 0), InputError);
}

TEST(Linear, ForwardMatchesReferenceOnInitializedParams) {
  kernels::KernelContext kernels;
  Linear layer(1, Shape{9}, 5);
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  buffer.initialize(3);
  // Non-zero bias so it is tested too.
  const int64_t bias = buffer.entries()[1].offset;
  for (int64_t i = 0; i < 5; ++i) buffer.values()[static_cast<size_t>(bias + i)] = 0.1f * i;
  const Tensor x = random_tensor({6, 9}, 4);
  const Forward forward = layer.forward(x, training_context(kernels));
  std::vector<float> expected(30);
  kernels::reference::linear_forward(x.data(), buffer.values().data(),
                                     buffer.values().data() + bias, expected.data(), 6, 9, 5);
  ASSERT_EQ(forward.output.shape(), Shape({6, 5}));
  for (int64_t i = 0; i < 30; ++i) EXPECT_NEAR(forward.output[i], expected[i], 1e-5f);
}

TEST(Linear, BackwardAccumulatesParameterGradientsAndCanSkipInputGradient) {
  kernels::KernelContext kernels;
  Linear layer(0, Shape{4}, 3);
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  buffer.initialize(5);
  LayerContext ctx = training_context(kernels);
  const Tensor x = random_tensor({2, 4}, 5), dy = random_tensor({2, 3}, 6);
  const Forward forward = layer.forward(x, ctx);
  ASSERT_FALSE(layer.backward(dy, forward.saved, ctx).empty());
  const std::vector<float> once(buffer.grads().begin(), buffer.grads().end());
  ctx.need_input_grad = false;
  EXPECT_TRUE(layer.backward(dy, forward.saved, ctx).empty());
  for (size_t i = 0; i < once.size(); ++i) EXPECT_FLOAT_EQ(buffer.grads()[i], 2.0f * once[i]);
}

TEST(Linear, WithGradsUnsetTheFirstMicroBatchOverwritesAndTheRestAdd) {
  kernels::KernelContext kernels;
  Linear layer(0, Shape{4}, 3);
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  buffer.initialize(5);
  EXPECT_TRUE(layer.writes_grads_first());
  const Tensor x = random_tensor({2, 4}, 5), dy = random_tensor({2, 3}, 6);
  LayerContext ctx = training_context(kernels);
  const Forward forward = layer.forward(x, ctx);
  layer.backward(dy, forward.saved, ctx);
  const std::vector<float> once(buffer.grads().begin(), buffer.grads().end());
  fill_gradients(buffer, std::nanf(""));
  ctx.grads_unset = true;
  layer.backward(dy, forward.saved, ctx);  // micro-batch 0: overwrites
  for (size_t i = 0; i < once.size(); ++i) EXPECT_EQ(buffer.grads()[i], once[i]);
  ctx.micro_batch = 1;
  ctx.micro_batches = 2;
  layer.backward(dy, forward.saved, ctx);  // a later one: adds
  for (size_t i = 0; i < once.size(); ++i) EXPECT_FLOAT_EQ(buffer.grads()[i], 2.0f * once[i]);
}

TEST(Linear, ForwardConsumingKeepsTheInputItIsHanded) {
  kernels::KernelContext kernels;
  Linear layer(0, Shape{4}, 3);
  testing::expect_forward_consuming_keeps_input(layer, random_tensor({2, 4}, 7), kernels);
}

TEST(Linear, SavesNothingInEvaluation) {
  kernels::KernelContext kernels;
  Linear layer(0, Shape{4}, 3);
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  LayerContext ctx = training_context(kernels);
  ctx.training = false;
  EXPECT_EQ(layer.forward(random_tensor({2, 4}, 1), ctx).saved.bytes(), 0u);
}

// Batched weight gradients: micro-batches of 2 rows, whose backwards (in any order) leave the
// gradients alone; finishing the step adds the same bits as one backward over all 6 rows.
class LinearBatchedWeightGrads : public ::testing::Test {
 protected:
  static constexpr int kMicroBatches = 3;
  LinearBatchedWeightGrads() : layers_{&layer_}, buffer_(layers_) { buffer_.initialize(5); }

  Tensor rows_of(const Tensor& t, int micro_batch) const {
    const int64_t width = t.numel() / (2 * kMicroBatches);
    Tensor part(Shape{2, width});
    std::copy_n(t.data() + micro_batch * 2 * width, 2 * width, part.data());
    return part;
  }
  LayerContext micro_batch_context(int micro_batch, int64_t step = 0) {
    LayerContext ctx = training_context(kernels_);
    ctx.step = step;
    ctx.micro_batch = micro_batch;
    ctx.micro_batches = kMicroBatches;
    ctx.batch_weight_grads = true;
    return ctx;
  }
  // Runs the backwards of `order` (micro-batch indices) and returns each one's dx.
  std::vector<Tensor> backwards(const std::vector<int>& order, int64_t step = 0) {
    std::vector<Tensor> dx(kMicroBatches);
    for (int m : order) {
      const LayerContext ctx = micro_batch_context(m, step);
      const Forward forward = layer_.forward(rows_of(x_, m), ctx);
      dx[static_cast<size_t>(m)] = layer_.backward(rows_of(dy_, m), forward.saved, ctx);
    }
    return dx;
  }
  std::vector<float> grads() const { return {buffer_.grads().begin(), buffer_.grads().end()}; }
  // The gradients of one accumulating backward over all rows (from zero).
  std::vector<float> one_backward_over_all_rows() {
    std::fill(buffer_.grads().begin(), buffer_.grads().end(), 0.0f);
    const LayerContext ctx = training_context(kernels_);
    layer_.backward(dy_, layer_.forward(x_, ctx).saved, ctx);
    std::vector<float> result = grads();
    std::fill(buffer_.grads().begin(), buffer_.grads().end(), 0.0f);
    return result;
  }

  kernels::KernelContext kernels_;
  Linear layer_{0, Shape{5}, 3};
  Layer* layers_[1];
  ParamBuffer buffer_;
  const Tensor x_ = random_tensor({2 * kMicroBatches, 5}, 7);
  const Tensor dy_ = random_tensor({2 * kMicroBatches, 3}, 8);
};

TEST_F(LinearBatchedWeightGrads, AddsOneGemmOverAllRowsWhenTheStepFinishes) {
  const std::vector<float> expected = one_backward_over_all_rows();
  std::vector<Tensor> dx(kMicroBatches);
  for (int m : {2, 0, 1}) {
    dx[static_cast<size_t>(m)] = backwards({m})[static_cast<size_t>(m)];
    for (float g : grads()) ASSERT_EQ(g, 0.0f) << "added before the step finished";
  }
  layer_.finish_step_grads(micro_batch_context(1));
  EXPECT_EQ(grads(), expected);  // bit for bit
  // dx is not deferred: each equals the accumulating backward's.
  for (int m = 0; m < kMicroBatches; ++m) {
    const LayerContext ctx = training_context(kernels_);
    const Tensor want =
        layer_.backward(rows_of(dy_, m), layer_.forward(rows_of(x_, m), ctx).saved, ctx);
    ASSERT_EQ(dx[static_cast<size_t>(m)].numel(), want.numel());
    for (int64_t i = 0; i < want.numel(); ++i) EXPECT_EQ(dx[static_cast<size_t>(m)][i], want[i]);
  }
}

TEST_F(LinearBatchedWeightGrads, AStepLeftUnfinishedIsDroppedByTheNext) {
  const std::vector<float> expected = one_backward_over_all_rows();
  for (int m : {0, 1}) {  // two of three, of other values: the step ends early
    const LayerContext ctx = micro_batch_context(m, /*step=*/4);
    const Tensor x = random_tensor({2, 5}, 20 + m), dy = random_tensor({2, 3}, 30 + m);
    layer_.backward(dy, layer_.forward(x, ctx).saved, ctx);
  }
  backwards({1, 2, 0}, /*step=*/5);
  layer_.finish_step_grads(micro_batch_context(0, /*step=*/5));
  EXPECT_EQ(grads(), expected);
}

TEST_F(LinearBatchedWeightGrads, FinishingAStepThatMissesMicroBatchesThrows) {
  backwards({0, 2});
  EXPECT_THROW(layer_.finish_step_grads(micro_batch_context(2)), Error);
}

TEST_F(LinearBatchedWeightGrads, FinishingAStepWithNothingDeferredChangesNothing) {
  layer_.finish_step_grads(micro_batch_context(2));
  for (float g : grads()) EXPECT_EQ(g, 0.0f);
}

TEST_F(LinearBatchedWeightGrads, WithGradsUnsetTheStepsGemmOverwrites) {
  const std::vector<float> expected = one_backward_over_all_rows();
  fill_gradients(buffer_, std::nanf(""));
  for (int m = 0; m < kMicroBatches; ++m) {
    LayerContext ctx = micro_batch_context(m);
    ctx.grads_unset = true;
    layer_.backward(rows_of(dy_, m), layer_.forward(rows_of(x_, m), ctx).saved, ctx);
  }
  LayerContext ctx = micro_batch_context(kMicroBatches - 1);
  ctx.grads_unset = true;
  layer_.finish_step_grads(ctx);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(grads()[i], expected[i]) << i;
}

// Grouped: micro-batches {0, 1} and {2}, each group's product added after the earlier group's:
// the bits of one backward over the first 4 rows, then an accumulating one over the last 2; a
// copy of the next group's before the earlier group's product is refused.
TEST_F(LinearBatchedWeightGrads, AddsOneGemmPerGroupInGroupOrder) {
  const auto rows = [](const Tensor& t, int64_t first, int64_t count) {
    const int64_t width = t.numel() / t.shape()[0];
    Tensor part(Shape{count, width});
    std::copy_n(t.data() + first * width, count * width, part.data());
    return part;
  };
  const LayerContext plain = training_context(kernels_);
  layer_.backward(rows(dy_, 0, 4), layer_.forward(rows(x_, 0, 4), plain).saved, plain);
  layer_.backward(rows(dy_, 4, 2), layer_.forward(rows(x_, 4, 2), plain).saved, plain);
  const std::vector<float> expected = grads();
  std::fill(buffer_.grads().begin(), buffer_.grads().end(), 0.0f);
  const auto grouped = [&](int m) {
    LayerContext ctx = micro_batch_context(m);
    ctx.weight_group_first = m < 2 ? 0 : 2;
    ctx.weight_group_size = m < 2 ? 2 : 1;
    return ctx;
  };
  const auto backward = [&](int m) {
    layer_.backward(rows_of(dy_, m), layer_.forward(rows_of(x_, m), grouped(m)).saved, grouped(m));
  };
  backward(1);
  backward(0);
  EXPECT_THROW(backward(2), Error);  // group 0's product has not run
  layer_.finish_step_grads(grouped(1));
  backward(2);
  layer_.finish_step_grads(grouped(2));
  EXPECT_EQ(grads(), expected);  // bit for bit
}

TEST_F(LinearBatchedWeightGrads, RejectsAMicroBatchOfAnotherSize) {
  backwards({0});
  LayerContext ctx = micro_batch_context(1);
  const Tensor x = random_tensor({3, 5}, 9), dy = random_tensor({3, 3}, 10);
  EXPECT_THROW(layer_.backward(dy, layer_.forward(x, ctx).saved, ctx), Error);
}

TEST(Linear, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  Linear layer(1, Shape{5}, 4);
  testing::expect_split_backward_bit_identical(
      layer, {random_tensor({3, 5}, 4), random_tensor({3, 5}, 5), random_tensor({3, 5}, 6)},
      kernels);
}

TEST(Linear, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  testing::SplitBackwardOf<Linear> layer(1, Shape{2, 6}, 4);
  testing::expect_gradients_match(layer, random_tensor({2, 2, 6}, 2), ctx);
}

}  // namespace
}  // namespace mpipe::nn
