// Tests for Flatten: shapes, round trip and gradients.
#include "nn/flatten.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape) {
  return testing::uniform_tensor(std::move(shape), CounterRng(4, RngPurpose::kData, 2, 0));
}

TEST(Flatten, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  Flatten layer(0, Shape{2, 3, 4});
  testing::expect_gradients_match(layer, random_tensor({2, 2, 3, 4}), ctx);
}

TEST(Flatten, ReshapesToBatchByNumelAndBack) {
  kernels::KernelContext kernels;
  Flatten layer(0, Shape{3, 2, 2});
  EXPECT_EQ(layer.output_shape(), Shape({12}));
  const Tensor x = random_tensor({5, 3, 2, 2});
  const LayerContext ctx{.kernels = kernels};
  const Forward forward = layer.forward(x, ctx);
  ASSERT_EQ(forward.output.shape(), Shape({5, 12}));
  const Tensor dx = layer.backward(forward.output, forward.saved, ctx);
  ASSERT_EQ(dx.shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(dx[i], x[i]);
}

TEST(Flatten, RejectsEmptyInput) { EXPECT_THROW(Flatten(0, Shape{}), InputError); }

}  // namespace
}  // namespace mpipe::nn
