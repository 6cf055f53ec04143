// Tests for ResidualBlock: finite-difference gradients of the basic and bottleneck blocks, the
// prefixed specs, agreement with the composed sub-layers, the batch norms' buffer updates and the
// split backward (bit-identical to backward, finite differences, what I keeps for W).
#include "nn/residual_block.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "kernels/eltwise.h"
#include "nn/param_buffer.h"
#include "split_backward_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(31, RngPurpose::kData, 7, stream));
}

std::vector<std::string> names(const std::vector<ParamSpec>& specs) {
  std::vector<std::string> out;
  for (const ParamSpec& spec : specs) out.push_back(spec.name);
  return out;
}

// A step of 1e-2 moves many ReLU inputs across zero at once (a weight feeds a whole channel
// that batch norm then centres on zero), so these checks use a step of 1e-3.
TEST(ResidualBlock, BasicIdentityBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  ResidualBlock block(0, Shape{3, 4, 4}, 3);
  ASSERT_FALSE(block.has_projection());
  testing::expect_gradients_match(block, random_tensor({2, 3, 4, 4}, 1), ctx,
                                  {.epsilon = 1e-3, .max_checks = 24});
}

TEST(ResidualBlock, BasicDownsamplingBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  ResidualBlock block(1, Shape{2, 5, 5}, 4, /*stride=*/2);
  ASSERT_TRUE(block.has_projection());
  EXPECT_EQ(block.output_shape(), Shape({4, 3, 3}));
  testing::expect_gradients_match(block, random_tensor({3, 2, 5, 5}, 2), ctx,
                                  {.epsilon = 1e-3, .max_checks = 24});
}

TEST(ResidualBlock, BottleneckBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  ResidualBlock block(2, Shape{4, 4, 4}, 8, /*stride=*/2, /*bottleneck=*/true);
  EXPECT_EQ(block.output_shape(), Shape({8, 2, 2}));
  testing::expect_gradients_match(block, random_tensor({3, 4, 4, 4}, 3), ctx,
                                  {.epsilon = 1e-3, .max_checks = 24});
}

TEST(ResidualBlock, NamesParamsAndBuffersBySubLayer) {
  const ResidualBlock basic(0, Shape{2, 4, 4}, 4, 2);
  EXPECT_EQ(names(basic.param_specs()),
            (std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias", "conv2.weight",
                                      "bn2.weight", "bn2.bias", "shortcut.conv.weight",
                                      "shortcut.bn.weight", "shortcut.bn.bias"}));
  EXPECT_EQ(names(basic.buffer_specs()),
            (std::vector<std::string>{"bn1.running_mean", "bn1.running_var", "bn2.running_mean",
                                      "bn2.running_var", "shortcut.bn.running_mean",
                                      "shortcut.bn.running_var"}));
  EXPECT_EQ(basic.param_specs()[0].shape, Shape({4, 2, 3, 3}));
  EXPECT_EQ(basic.param_specs()[6].shape, Shape({4, 2, 1, 1}));
  const ResidualBlock bottleneck(0, Shape{8, 4, 4}, 8, 1, true);
  EXPECT_FALSE(bottleneck.has_projection());
  EXPECT_EQ(names(bottleneck.param_specs()),
            (std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias", "conv2.weight",
                                      "bn2.weight", "bn2.bias", "conv3.weight", "bn3.weight",
                                      "bn3.bias"}));
  EXPECT_EQ(bottleneck.param_specs()[3].shape, Shape({2, 2, 3, 3}));
  EXPECT_EQ(bottleneck.kind(), "residual_block");
  EXPECT_GT(bottleneck.forward_flops_per_example(), 0.0);
}

TEST(ResidualBlock, ForwardEqualsTheComposedSubLayers) {
  kernels::KernelContext ctx;
  ResidualBlock block(0, Shape{2, 5, 5}, 3, 2);
  const int global_index = 0;
  Layer* layer = &block;
  ParamBuffer buffer(std::span<Layer* const>(&layer, 1));
  buffer.initialize(5);
  // The same parameters, bound to standalone layers in spec order.
  Conv2d conv1(global_index, Shape{2, 5, 5}, 3, 3, 2, 1, 1, 1, false);
  BatchNorm2d bn1(global_index, conv1.output_shape());
  Conv2d conv2(global_index, conv1.output_shape(), 3, 3, 1, 1, 1, 1, false);
  BatchNorm2d bn2(global_index, conv2.output_shape());
  Conv2d shortcut_conv(global_index, Shape{2, 5, 5}, 3, 1, 2, 0, 1, 1, false);
  BatchNorm2d shortcut_bn(global_index, shortcut_conv.output_shape());
  std::vector<std::span<float>> params, grads, buffers;
  for (const ParamBuffer::Entry& e : buffer.entries()) {
    const auto n = static_cast<size_t>(e.shape.numel());
    const auto offset = static_cast<size_t>(e.offset);
    if (e.trainable) {
      params.push_back(buffer.values().subspan(offset, n));
      grads.push_back(buffer.grads().subspan(offset, n));
    } else {
      buffers.push_back(buffer.buffers().subspan(offset, n));
    }
  }
  Tensor scratch_buffers(Shape{12});  // standalone running statistics, not the block's
  auto stats = [&](size_t i) {
    return std::vector<std::span<float>>{scratch_buffers.span().subspan(i * 6, 3),
                                         scratch_buffers.span().subspan(i * 6 + 3, 3)};
  };
  conv1.bind({params[0]}, {grads[0]}, {});
  bn1.bind({params[1], params[2]}, {grads[1], grads[2]}, stats(0));
  conv2.bind({params[3]}, {grads[3]}, {});
  bn2.bind({params[4], params[5]}, {grads[4], grads[5]}, stats(1));
  shortcut_conv.bind({params[6]}, {grads[6]}, {});
  shortcut_bn.bind({params[7], params[8]}, {grads[7], grads[8]}, {buffers[4], buffers[5]});

  const LayerContext lctx{.kernels = ctx, .recompute = true};
  const Tensor x = random_tensor({2, 2, 5, 5}, 4);
  const Tensor y = block.forward(x, lctx).output;
  Tensor a = bn1.forward(conv1.forward(x, lctx).output, lctx).output;
  kernels::eltwise_forward(ctx, kernels::EltwiseKind::kRelu, a.data(), a.data(), a.numel());
  Tensor main = bn2.forward(conv2.forward(a, lctx).output, lctx).output;
  const Tensor shortcut = shortcut_bn.forward(shortcut_conv.forward(x, lctx).output, lctx).output;
  ASSERT_EQ(y.shape(), main.shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float expected = std::max(0.0f, main[i] + shortcut[i]);
    EXPECT_NEAR(y[i], expected, 1e-5) << i;
  }
}

TEST(ResidualBlock, OnlyAFirstForwardReturnsABufferUpdateAndApplyingItMovesEveryStatistic) {
  kernels::KernelContext ctx;
  ResidualBlock block(0, Shape{2, 4, 4}, 4, 2);
  Layer* layer = &block;
  ParamBuffer buffer(std::span<Layer* const>(&layer, 1));
  buffer.initialize(3);
  const std::vector<float> initial(buffer.buffers().begin(), buffer.buffers().end());
  const Tensor x = random_tensor({2, 2, 4, 4}, 5);
  EXPECT_TRUE(
      block.forward(x, LayerContext{.kernels = ctx, .recompute = true}).buffer_update.empty());
  EXPECT_TRUE(
      block.forward(x, LayerContext{.kernels = ctx, .training = false}).buffer_update.empty());
  const Forward first = block.forward(x, LayerContext{.kernels = ctx, .recompute = false});
  // Three batch norms of 4 channels: mean, variance and the unbiasing factor each.
  EXPECT_EQ(block.buffer_update_size(), 3 * (2 * 4 + 1));
  ASSERT_EQ(std::ssize(first.buffer_update), block.buffer_update_size());
  EXPECT_TRUE(std::equal(initial.begin(), initial.end(), buffer.buffers().begin()));
  block.apply_buffer_update(first.buffer_update);
  // Every running statistic of the three batch norms moved.
  for (const ParamBuffer::Entry& e : buffer.entries()) {
    if (e.trainable) continue;
    for (int64_t j = 0; j < e.shape.numel(); ++j) {
      const auto i = static_cast<size_t>(e.offset + j);
      EXPECT_NE(buffer.buffers()[i], initial[i]) << e.name << "[" << j << "]";
    }
  }
  EXPECT_THROW(block.apply_buffer_update(std::span(first.buffer_update).first(9)), Error);
}

TEST(ResidualBlock, BufferUpdateGivesEachBatchNormItsOwnStatistics) {
  kernels::KernelContext ctx;
  ResidualBlock block(0, Shape{2, 4, 4}, 3, 2);
  Layer* layer = &block;
  ParamBuffer buffer(std::span<Layer* const>(&layer, 1));
  buffer.initialize(3);
  const Forward first = block.forward(random_tensor({2, 2, 4, 4}, 6), LayerContext{.kernels = ctx});
  block.apply_buffer_update(first.buffer_update);
  // Saved: per main-path pair the conv's then the bn's tensors (x, mean, variance), then the
  // shortcut bn's; each bn normalizes 2 examples of 2 x 2 pixels per channel.
  const size_t per_pair = Conv2d::kSavedTensors + BatchNorm2d::kSavedTensors;
  const std::vector<std::pair<std::string, size_t>> batch_norms = {
      {"bn1", Conv2d::kSavedTensors},
      {"bn2", per_pair + Conv2d::kSavedTensors},
      {"shortcut.bn", 2 * per_pair}};
  const float unbias = 8.0f / 7.0f;
  auto stat = [&](const std::string& name, int64_t c) {
    for (const ParamBuffer::Entry& e : buffer.entries()) {
      if (e.name == name) return buffer.buffers()[static_cast<size_t>(e.offset + c)];
    }
    ADD_FAILURE() << "no buffer " << name;
    return 0.0f;
  };
  for (const auto& [name, at] : batch_norms) {
    const Tensor& mean = first.saved.tensors[at + 1];
    const Tensor& variance = first.saved.tensors[at + 2];
    for (int64_t c = 0; c < 3; ++c) {
      EXPECT_FLOAT_EQ(stat(name + ".running_mean", c), 0.1f * mean[c]) << name << c;
      EXPECT_FLOAT_EQ(stat(name + ".running_var", c), 0.9f + 0.1f * variance[c] * unbias)
          << name << c;
    }
  }
}

TEST(ResidualBlock, SkipsTheInputGradientWhenNotNeededButStillAccumulatesParameters) {
  kernels::KernelContext ctx;
  ResidualBlock block(0, Shape{2, 4, 4}, 2);
  Layer* layer = &block;
  ParamBuffer buffer(std::span<Layer* const>(&layer, 1));
  buffer.initialize(3);
  const LayerContext lctx{.kernels = ctx, .need_input_grad = false};
  const Forward out = block.forward(random_tensor({2, 2, 4, 4}, 6), lctx);
  EXPECT_TRUE(block.backward(random_tensor(out.output.shape(), 7), out.saved, lctx).empty());
  double sum = 0.0;
  for (float g : buffer.grads()) sum += std::abs(g);
  EXPECT_GT(sum, 0.0);
}

// The three shapes of block: basic with the identity shortcut, basic with the projection, and
// bottleneck with the projection; with the batch and stream of their unsplit finite-difference
// checks above (whose inputs keep the ReLUs' inputs away from zero at the step 1e-3).
struct BlockCase {
  const char* name;
  Shape input;
  int64_t channels, stride;
  bool bottleneck;
  int64_t check_batch;
  uint64_t check_stream;
};
const BlockCase kBlockCases[] = {{"basic identity", Shape{3, 4, 4}, 3, 1, false, 2, 1},
                                 {"basic projection", Shape{2, 5, 5}, 4, 2, false, 3, 2},
                                 {"bottleneck", Shape{4, 4, 4}, 8, 2, true, 3, 3}};

TEST(ResidualBlock, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  for (const BlockCase& c : kBlockCases) {
    for (const bool need_input_grad : {true, false}) {
      SCOPED_TRACE(std::string(c.name) + (need_input_grad ? "" : ", no input gradient"));
      ResidualBlock block(need_input_grad ? 1 : 0, c.input, c.channels, c.stride, c.bottleneck);
      std::vector<Tensor> inputs;
      for (uint64_t m = 0; m < 3; ++m) {
        inputs.push_back(random_tensor(c.input.batched(2), 10 + m));
      }
      testing::expect_split_backward_bit_identical(block, inputs, kernels, need_input_grad);
    }
  }
}

TEST(ResidualBlock, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  for (const BlockCase& c : kBlockCases) {
    SCOPED_TRACE(c.name);
    testing::SplitBackwardOf<ResidualBlock> block(1, c.input, c.channels, c.stride, c.bottleneck);
    testing::expect_gradients_match(block,
                                    random_tensor(c.input.batched(c.check_batch), c.check_stream),
                                    ctx, {.epsilon = 1e-3, .max_checks = 24});
  }
}

TEST(ResidualBlock, NeedsCountWhatBackwardInputKeepsForBackwardWeight) {
  kernels::KernelContext kernels;
  for (const BlockCase& c : kBlockCases) {
    SCOPED_TRACE(c.name);
    ResidualBlock block(1, c.input, c.channels, c.stride, c.bottleneck);
    testing::expect_needs_count_weight_work(block, random_tensor(c.input.batched(3), 30), kernels);
  }
}

TEST(ResidualBlock, RejectsBadSettings) {
  EXPECT_THROW(ResidualBlock(0, Shape{4, 4}, 4), InputError);
  EXPECT_THROW(ResidualBlock(0, Shape{4, 4, 4}, 6, 1, /*bottleneck=*/true), InputError);
  EXPECT_THROW(ResidualBlock(0, Shape{4, 4, 4}, 4, /*stride=*/0), InputError);
}

}  // namespace
}  // namespace mpipe::nn
