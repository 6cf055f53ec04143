// Tests for Upsample: nearest-neighbour upsampling's output, its gradient against central
// differences, and its shape checks.
#include "nn/upsample.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint32_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(8, RngPurpose::kData, 4, stream));
}

TEST(Upsample, CopiesEachPixelIntoAScaleByScaleSquare) {
  kernels::KernelContext kernels;
  Upsample layer(3, Shape{2, 2, 3}, 2);
  EXPECT_EQ(layer.kind(), "upsample");
  EXPECT_EQ(layer.output_shape(), (Shape{2, 4, 6}));
  const Tensor x = random_tensor({3, 2, 2, 3}, 0);
  const Forward forward = layer.forward(x, LayerContext{.kernels = kernels});
  ASSERT_EQ(forward.output.shape(), (Shape{3, 2, 4, 6}));
  EXPECT_TRUE(forward.saved.tensors.empty());
  for (int64_t plane = 0; plane < 6; ++plane) {
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 6; ++j) {
        ASSERT_EQ(forward.output[(plane * 4 + i) * 6 + j], x[(plane * 2 + i / 2) * 3 + j / 2]);
      }
    }
  }
  EXPECT_TRUE(layer.needs().kept_tensor_bytes.empty());
}

TEST(Upsample, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext kernels;
  Upsample layer(1, Shape{3, 4, 5}, 2);
  testing::expect_gradients_match(layer, random_tensor({2, 3, 4, 5}, 1), kernels);
  Upsample triple(1, Shape{2, 3, 2}, 3);
  testing::expect_gradients_match(triple, random_tensor({2, 2, 3, 2}, 2), kernels);
}

TEST(Upsample, RefusesAnInputThatIsNotAnImageAndAScaleBelowOne) {
  try {
    Upsample(0, Shape{64}, 2);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "upsample needs an input [channels, height, width], got [64]");
  }
  EXPECT_THROW(Upsample(0, Shape{1, 4, 4}, 0), InputError);
}

}  // namespace
}  // namespace mpipe::nn
