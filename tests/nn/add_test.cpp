// Tests for Add: the sum of the main input and the read values, its gradients against central
// differences, and its shape checks.
#include "nn/add.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "support/random_tensor.h"

namespace mpipe::nn {
namespace {

Tensor random_tensor(Shape shape, uint32_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(4, RngPurpose::kData, 2, stream));
}

// loss = sum(add(x, reads) * r), in double.
double weighted_loss(Add& add, const Tensor& x, const std::vector<Tensor>& reads, const Tensor& r,
                     const LayerContext& ctx) {
  std::vector<const Tensor*> pointers;
  for (const Tensor& read : reads) pointers.push_back(&read);
  const Tensor y = add.forward_reading(x, pointers, ctx).output;
  double loss = 0.0;
  for (int64_t j = 0; j < y.numel(); ++j) loss += static_cast<double>(y[j]) * r[j];
  return loss;
}

TEST(Add, SumsTheMainInputAndEveryReadInOrder) {
  kernels::KernelContext kernels;
  Add add(3, Shape{2, 3}, {Shape{2, 3}, Shape{2, 3}});
  EXPECT_EQ(add.num_reads(), 2);
  EXPECT_EQ(add.output_shape(), (Shape{2, 3}));
  const Tensor x = random_tensor({4, 2, 3}, 0);
  const Tensor a = random_tensor({4, 2, 3}, 1);
  const Tensor b = random_tensor({4, 2, 3}, 2);
  const Tensor* reads[] = {&a, &b};
  const Forward forward = add.forward_reading(x, reads, LayerContext{.kernels = kernels});
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(forward.output[i], (x[i] + a[i]) + b[i]);
  EXPECT_TRUE(forward.saved.tensors.empty());
  // What it states for the memory model: nothing kept; its backward's copies of dy, one per read
  // beyond the input gradient.
  const LayerNeeds needs = add.needs();
  EXPECT_TRUE(needs.kept_tensor_bytes.empty());
  EXPECT_EQ(needs.backward_temporary_bytes, 2 * 6 * sizeof(float));
  const std::vector<Tensor> grads =
      add.backward_reading(forward.output, forward.saved, LayerContext{.kernels = kernels});
  ASSERT_EQ(grads.size(), 3u);
  for (const Tensor& g : grads) EXPECT_EQ(g.shape(), x.shape());
}

// Every input's gradient against central differences of sum(y * r).
TEST(Add, BackwardMatchesFiniteDifferences) {
  kernels::KernelContext kernels;
  const LayerContext ctx{.kernels = kernels};
  Add add(1, Shape{5}, {Shape{5}});
  Tensor x = random_tensor({3, 5}, 0);
  std::vector<Tensor> reads = {random_tensor({3, 5}, 1)};
  const Tensor r = random_tensor({3, 5}, 2);
  const std::vector<Tensor> grads = add.backward_reading(r, Saved{}, ctx);
  ASSERT_EQ(grads.size(), 2u);
  constexpr float kEpsilon = 1e-2f;
  for (size_t input = 0; input < 2; ++input) {
    Tensor& perturbed = input == 0 ? x : reads[0];
    for (int64_t j = 0; j < perturbed.numel(); ++j) {
      const float saved = perturbed[j];
      perturbed[j] = saved + kEpsilon;
      const double up = weighted_loss(add, x, reads, r, ctx);
      perturbed[j] = saved - kEpsilon;
      const double down = weighted_loss(add, x, reads, r, ctx);
      perturbed[j] = saved;
      const double numeric = (up - down) / (2.0 * kEpsilon);
      EXPECT_NEAR(grads[input][j], numeric, 1e-3 * (1.0 + std::abs(numeric)))
          << "input " << input << " element " << j;
    }
  }
}

TEST(Add, TheModelsFirstLayerComputesNoMainInputGradient) {
  kernels::KernelContext kernels;
  Add add(0, Shape{2}, {Shape{2}});
  const std::vector<Tensor> grads =
      add.backward_reading(random_tensor({1, 2}, 0), Saved{},
                           LayerContext{.kernels = kernels, .need_input_grad = false});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_TRUE(grads[0].empty());
  EXPECT_EQ(grads[1].shape(), (Shape{1, 2}));
}

TEST(Add, RefusesNoReadsAndAReadOfAnotherShape) {
  EXPECT_THROW(Add(0, Shape{4}, {}), InputError);
  try {
    Add(0, Shape{4}, {Shape{4}, Shape{3}});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "read 1 has shape [3], but the main input has [4]");
  }
}

}  // namespace
}  // namespace mpipe::nn
