// Tests for Concat: the main input and the read values joined along an example's first axis, its
// gradients against central differences, and its shape checks.
#include "nn/concat.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "gradient_check.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint32_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(6, RngPurpose::kData, 3, stream));
}

// The reference: example b of the output is x's example b, then each read's, back to back.
TEST(Concat, JoinsEachExampleAlongItsFirstAxisInOrder) {
  kernels::KernelContext kernels;
  Concat concat(2, Shape{2, 3, 2}, {Shape{1, 3, 2}, Shape{3, 3, 2}});
  EXPECT_EQ(concat.kind(), "concat");
  EXPECT_EQ(concat.num_reads(), 2);
  EXPECT_EQ(concat.output_shape(), (Shape{6, 3, 2}));
  const Tensor x = random_tensor({4, 2, 3, 2}, 0);
  const Tensor a = random_tensor({4, 1, 3, 2}, 1);
  const Tensor b = random_tensor({4, 3, 3, 2}, 2);
  const Tensor* reads[] = {&a, &b};
  const Forward forward = concat.forward_reading(x, reads, LayerContext{.kernels = kernels});
  ASSERT_EQ(forward.output.shape(), (Shape{4, 6, 3, 2}));
  EXPECT_TRUE(forward.saved.tensors.empty());
  for (int64_t row = 0; row < 4; ++row) {
    const float* y = forward.output.data() + row * 36;
    for (int64_t i = 0; i < 12; ++i) ASSERT_EQ(y[i], x[row * 12 + i]);
    for (int64_t i = 0; i < 6; ++i) ASSERT_EQ(y[12 + i], a[row * 6 + i]);
    for (int64_t i = 0; i < 18; ++i) ASSERT_EQ(y[18 + i], b[row * 18 + i]);
  }
  // What it states for the memory model: nothing kept; its backward's reads' gradients.
  const LayerNeeds needs = concat.needs();
  EXPECT_TRUE(needs.kept_tensor_bytes.empty());
  EXPECT_EQ(needs.backward_temporary_bytes, (6 + 18) * sizeof(float));
  EXPECT_EQ(needs.smallest_temporary_bytes, 6 * sizeof(float));
  // The backward gives each input its slice back.
  const std::vector<Tensor> grads =
      concat.backward_reading(forward.output, forward.saved, LayerContext{.kernels = kernels});
  ASSERT_EQ(grads.size(), 3u);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(grads[0][i], x[i]);
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(grads[1][i], a[i]);
  for (int64_t i = 0; i < b.numel(); ++i) ASSERT_EQ(grads[2][i], b[i]);
}

TEST(Concat, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext kernels;
  Concat concat(1, Shape{2, 4, 3}, {Shape{3, 4, 3}});
  testing::expect_reading_gradients_match(concat, random_tensor({3, 2, 4, 3}, 0),
                                          {random_tensor({3, 3, 4, 3}, 1)}, {true}, kernels);
  Concat features(1, Shape{5}, {Shape{2}, Shape{5}});
  testing::expect_reading_gradients_match(features, random_tensor({2, 5}, 2),
                                          {random_tensor({2, 2}, 3), random_tensor({2, 5}, 4)},
                                          {true, true}, kernels);
}

TEST(Concat, TheModelsFirstLayerComputesNoMainInputGradient) {
  kernels::KernelContext kernels;
  Concat concat(0, Shape{2}, {Shape{3}});
  const std::vector<Tensor> grads =
      concat.backward_reading(random_tensor({1, 5}, 0), Saved{},
                              LayerContext{.kernels = kernels, .need_input_grad = false});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_TRUE(grads[0].empty());
  EXPECT_EQ(grads[1].shape(), (Shape{1, 3}));
}

TEST(Concat, RefusesNoReadsAndAReadOfAnotherSize) {
  EXPECT_THROW(Concat(0, Shape{4, 2, 2}, {}), InputError);
  EXPECT_THROW(Concat(0, Shape{}, {Shape{}}), InputError);
  try {
    Concat(0, Shape{4, 8, 8}, {Shape{2, 8, 8}, Shape{2, 4, 4}});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "read 1 has shape [2, 4, 4], which does not match the main input [4, 8, 8] past "
                 "the first axis");
  }
}

}  // namespace
}  // namespace mpipe::nn
