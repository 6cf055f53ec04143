// Tests for SeparableCell: finite-difference gradients with and without the residual sum,
// prefixed specs, the batch norm's buffer update, input validation and the split backward
// (bit-identical to backward, finite differences, what I keeps for W).
#include "nn/separable_cell.h"

#include <gtest/gtest.h>

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

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(37, RngPurpose::kData, 8, stream));
}

TEST(SeparableCell, BackwardMatchesFiniteDifferencesWithResidual) {
  kernels::KernelContext ctx;
  SeparableCell cell(0, Shape{3, 5, 5}, 3);
  ASSERT_TRUE(cell.has_residual());
  testing::expect_gradients_match(cell, random_tensor({2, 3, 5, 5}, 1), ctx, {.max_checks = 32});
}

TEST(SeparableCell, BackwardMatchesFiniteDifferencesWithStrideAndNewWidth) {
  kernels::KernelContext ctx;
  SeparableCell cell(1, Shape{2, 6, 6}, 4, /*kernel=*/5, /*stride=*/2);
  ASSERT_FALSE(cell.has_residual());
  EXPECT_EQ(cell.output_shape(), Shape({4, 3, 3}));
  testing::expect_gradients_match(cell, random_tensor({2, 2, 6, 6}, 2), ctx, {.max_checks = 32});
}

TEST(SeparableCell, NamesParamsAndBuffersBySubLayer) {
  const SeparableCell cell(0, Shape{3, 4, 4}, 5, 3);
  EXPECT_EQ(cell.kind(), "separable_cell");
  const auto params = cell.param_specs();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].name, "depthwise.weight");
  EXPECT_EQ(params[0].shape, Shape({3, 1, 3, 3}));
  EXPECT_EQ(params[0].fan_in, 9);
  EXPECT_EQ(params[1].name, "pointwise.weight");
  EXPECT_EQ(params[1].shape, Shape({5, 3, 1, 1}));
  EXPECT_EQ(params[2].name, "bn.weight");
  EXPECT_EQ(params[3].name, "bn.bias");
  const auto buffers = cell.buffer_specs();
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[0].name, "bn.running_mean");
  EXPECT_EQ(buffers[1].name, "bn.running_var");
}

TEST(SeparableCell, BufferUpdateIsItsBatchNormsStatisticsFromAFirstForwardOnly) {
  kernels::KernelContext ctx;
  SeparableCell cell(0, Shape{2, 3, 3}, 2);
  Layer* layer = &cell;
  ParamBuffer buffer(std::span<Layer* const>(&layer, 1));
  buffer.initialize(4);
  const Tensor x = random_tensor({2, 2, 3, 3}, 3);
  EXPECT_TRUE(
      cell.forward(x, LayerContext{.kernels = ctx, .recompute = true}).buffer_update.empty());
  const Forward first = cell.forward(x, LayerContext{.kernels = ctx});
  EXPECT_EQ(cell.buffer_update_size(), 2 * 2 + 1);
  ASSERT_EQ(std::ssize(first.buffer_update), cell.buffer_update_size());
  cell.apply_buffer_update(first.buffer_update);
  // Saved: x, the depthwise output, then the bn's x, mean and variance; buffers: running mean
  // then running variance, each [2].
  const Tensor& mean = first.saved.tensors[3];
  const ParamBuffer::Entry& running_mean = buffer.entries()[4];
  ASSERT_EQ(running_mean.name, "bn.running_mean");
  for (int64_t c = 0; c < 2; ++c) {
    EXPECT_FLOAT_EQ(buffer.buffers()[static_cast<size_t>(running_mean.offset + c)], 0.1f * mean[c]);
  }
}

// With the residual sum (same shape), and with a stride and a new width (no residual); with the
// stream of their unsplit finite-difference checks above (inputs whose ReLUs stay off their kink
// at the check's step).
struct CellCase {
  const char* name;
  Shape input;
  int64_t channels, kernel, stride;
  uint64_t check_stream;
};
const CellCase kCellCases[] = {{"residual", Shape{3, 5, 5}, 3, 3, 1, 1},
                               {"stride and new width", Shape{2, 6, 6}, 4, 5, 2, 2}};

TEST(SeparableCell, SplitBackwardGivesTheBitsOfBackward) {
  kernels::KernelContext kernels;
  for (const CellCase& c : kCellCases) {
    for (const bool need_input_grad : {true, false}) {
      SCOPED_TRACE(std::string(c.name) + (need_input_grad ? "" : ", no input gradient"));
      SeparableCell cell(need_input_grad ? 1 : 0, c.input, c.channels, c.kernel, c.stride);
      std::vector<Tensor> inputs;
      for (uint64_t m = 0; m < 3; ++m) {
        inputs.push_back(random_tensor(c.input.batched(2), 10 + m));
      }
      testing::expect_split_backward_bit_identical(cell, inputs, kernels, need_input_grad);
    }
  }
}

TEST(SeparableCell, SplitBackwardMatchesFiniteDifferences) {
  kernels::KernelContext ctx;
  for (const CellCase& c : kCellCases) {
    SCOPED_TRACE(c.name);
    testing::SplitBackwardOf<SeparableCell> cell(1, c.input, c.channels, c.kernel, c.stride);
    testing::expect_gradients_match(cell, random_tensor(c.input.batched(2), c.check_stream), ctx,
                                    {.max_checks = 32});
  }
}

TEST(SeparableCell, NeedsCountWhatBackwardInputKeepsForBackwardWeight) {
  kernels::KernelContext kernels;
  for (const CellCase& c : kCellCases) {
    SCOPED_TRACE(c.name);
    SeparableCell cell(1, c.input, c.channels, c.kernel, c.stride);
    testing::expect_needs_count_weight_work(cell, random_tensor(c.input.batched(3), 30), kernels);
  }
}

TEST(SeparableCell, RejectsEvenKernelsAndNonImageInputs) {
  EXPECT_THROW(SeparableCell(0, Shape{3, 4, 4}, 3, 2), InputError);
  EXPECT_THROW(SeparableCell(0, Shape{3, 4}, 3), InputError);
}

}  // namespace
}  // namespace mpipe::nn
