// Tests for the Embedding layer: lookups, scatter-add gradients and id validation.
#include "nn/embedding.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "gradient_check.h"
#include "nn/param_buffer.h"
#include "split_backward_check.h"

namespace mpipe::nn {
namespace {

Tensor ids(Shape shape, std::vector<float> values) { return Tensor(std::move(shape), values); }

// The values (or gradients) of parameter `index` of a one-layer buffer.
std::span<const float> param(std::span<const float> all, const ParamBuffer& buffer, size_t index) {
  const ParamBuffer::Entry& entry = buffer.entries().at(index);
  return all.subspan(static_cast<size_t>(entry.offset), static_cast<size_t>(entry.shape.numel()));
}

TEST(Embedding, ParamGradientsMatchFiniteDifferences) {
  kernels::KernelContext ctx;
  Embedding layer(0, Shape{4}, 6, 3, 5);
  testing::expect_gradients_match(layer, ids({2, 4}, {0, 5, 2, 2, 1, 0, 5, 3}), ctx,
                                  {.check_input = false});
}

TEST(Embedding, OutputIsTheTokenRowPlusThePositionRow) {
  kernels::KernelContext kernels;
  Embedding layer(2, Shape{3}, 4, 2, 8);
  Layer* layers[] = {&layer};
  ParamBuffer params(layers);
  params.initialize(5);
  const std::span<const float> token = param(params.values(), params, 0);
  const std::span<const float> position = param(params.values(), params, 1);
  const Tensor x = ids({2, 3}, {3, 0, 3, 1, 2, 0});
  const Tensor y = layer.forward(x, {.kernels = kernels}).output;
  ASSERT_EQ(y.shape(), Shape({2, 3, 2}));
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = 0; t < 3; ++t) {
      const auto id = static_cast<int64_t>(x[b * 3 + t]);
      for (int64_t j = 0; j < 2; ++j) {
        EXPECT_EQ(y[(b * 3 + t) * 2 + j], token[id * 2 + j] + position[t * 2 + j]);
      }
    }
  }
}

TEST(Embedding, BackwardAddsEveryOccurrenceOfATokenAndReturnsNoInputGradient) {
  kernels::KernelContext kernels;
  Embedding layer(0, Shape{3}, 4, 1, 3);
  Layer* layers[] = {&layer};
  ParamBuffer params(layers);
  const LayerContext ctx{.kernels = kernels};
  const Forward forward = layer.forward(ids({2, 3}, {1, 1, 2, 1, 0, 2}), ctx);
  const Tensor dy(Shape{2, 3, 1}, std::vector<float>{1, 2, 4, 8, 16, 32});
  const Tensor dx = layer.backward(dy, forward.saved, ctx);
  EXPECT_TRUE(dx.empty());
  const std::vector<float> token = {16, 1 + 2 + 8, 4 + 32, 0};
  const std::vector<float> position = {1 + 8, 2 + 16, 4 + 32};
  const auto token_grad = param(params.grads(), params, 0);
  const auto position_grad = param(params.grads(), params, 1);
  EXPECT_EQ(std::vector<float>(token_grad.begin(), token_grad.end()), token);
  EXPECT_EQ(std::vector<float>(position_grad.begin(), position_grad.end()), position);
}

TEST(Embedding, RejectsTokenIdsThatAreNotIntegersInTheVocabulary) {
  kernels::KernelContext kernels;
  Embedding layer(0, Shape{2}, 4, 3, 2);
  Layer* layers[] = {&layer};
  ParamBuffer params(layers);
  const LayerContext ctx{.kernels = kernels};
  EXPECT_NO_THROW(layer.forward(ids({1, 2}, {0, 3}), ctx));
  EXPECT_THROW(layer.forward(ids({1, 2}, {0, 4}), ctx), InputError);
  EXPECT_THROW(layer.forward(ids({1, 2}, {-1, 0}), ctx), InputError);
  EXPECT_THROW(layer.forward(ids({1, 2}, {1.5f, 0}), ctx), InputError);
}

TEST(Embedding, RejectsSequencesLongerThanMaxLen) {
  EXPECT_THROW(Embedding(0, Shape{9}, 10, 4, 8), InputError);
  EXPECT_THROW(Embedding(0, Shape{2, 3}, 10, 4, 8), InputError);
  const Embedding fits(0, Shape{8}, 10, 4, 8);
  EXPECT_EQ(fits.output_shape(), Shape({8, 4}));
  const auto specs = fits.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "token");
  EXPECT_EQ(specs[0].shape, Shape({10, 4}));
  EXPECT_EQ(specs[1].name, "position");
  EXPECT_EQ(specs[1].shape, Shape({8, 4}));
}

TEST(Embedding, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  Embedding layer(0, Shape{4}, 6, 3, 5);
  testing::expect_split_backward_bit_identical(
      layer, {ids({2, 4}, {0, 5, 2, 2, 1, 0, 5, 3}), ids({2, 4}, {5, 5, 1, 0, 2, 4, 4, 3})},
      kernels, /*need_input_grad=*/false);
}

TEST(Embedding, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  testing::SplitBackwardOf<Embedding> layer(0, Shape{4}, 6, 3, 5);
  testing::expect_gradients_match(layer, ids({2, 4}, {0, 5, 2, 2, 1, 0, 5, 3}), ctx,
                                  {.check_input = false});
}

}  // namespace
}  // namespace mpipe::nn
