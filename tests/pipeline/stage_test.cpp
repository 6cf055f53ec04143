// Tests for pipeline::Stage: stored activation bytes per recompute mode, recompute changing no
// number, micro-batch accumulation equal to the full batch, buffer updates (batch norm) kept per
// micro-batch and applied in global order, and misuse errors.
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/memory_account.h"
#include "core/rng.h"
#include "kernels/context.h"
#include "kernels/eltwise.h"
#include "nn/activation.h"
#include "nn/batch_norm2d.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/residual_block.h"
#include "support/random_tensor.h"

namespace mpipe::pipeline {
namespace {

constexpr int64_t kIn = 6, kHidden = 5, kOut = 3;
// The stage's first layer is global layer 1, so its backward returns an input gradient.
constexpr int kFirstLayer = 1;

// Linear(6 → 5) → ReLU → Dropout → Linear(5 → 3), global layers 1..4.
std::vector<std::unique_ptr<nn::Layer>> small_stack(double dropout_rate) {
  std::vector<std::unique_ptr<nn::Layer>> layers;
  layers.push_back(std::make_unique<nn::Linear>(kFirstLayer, Shape{kIn}, kHidden));
  layers.push_back(std::make_unique<nn::Activation>(kFirstLayer + 1, Shape{kHidden},
                                                    kernels::EltwiseKind::kRelu));
  layers.push_back(std::make_unique<nn::Dropout>(kFirstLayer + 2, Shape{kHidden}, dropout_rate));
  layers.push_back(std::make_unique<nn::Linear>(kFirstLayer + 3, Shape{kHidden}, kOut));
  return layers;
}

std::unique_ptr<Stage> make_stage(plan::Recompute recompute, int num_micro_batches,
                                  double dropout_rate = 0.3,
                                  plan::WeightGrads weight_grads = plan::WeightGrads::kAccumulate) {
  // (Under weight_grads: grouped, groups of 2: of 3 micro-batches, one of 2 and one of 1.)
  auto stage = std::make_unique<Stage>(small_stack(dropout_rate), recompute, num_micro_batches,
                                       weight_grads, nullptr, std::min(2, num_micro_batches));
  stage->params().initialize(17);
  return stage;
}

Tensor random_tensor(Shape shape, uint64_t stream) {
  return testing::uniform_tensor(std::move(shape), CounterRng(31, RngPurpose::kData, 7, stream));
}

nn::LayerContext context(kernels::KernelContext& kernels, int64_t first_example) {
  return nn::LayerContext{
      .kernels = kernels, .seed = 99, .step = 3, .first_example = first_example};
}

// A backward takes the received gradient over instead of copying it, and frees it after the last
// layer: a stage of one ReLU holds, beyond what was alive before, only the input gradient, in
// both backward paths (whole stash, per-layer recompute).
TEST(Stage, BackwardTakesTheOutputGradientOverWithoutACopy) {
  constexpr int64_t kRows = 64, kWidth = 256;  // 64 KiB activations: allocator slack is noise
  for (plan::Recompute recompute : {plan::Recompute::kNever, plan::Recompute::kPerLayer}) {
    std::vector<std::unique_ptr<nn::Layer>> layers;
    layers.push_back(
        std::make_unique<nn::Activation>(kFirstLayer, Shape{kWidth}, kernels::EltwiseKind::kRelu));
    Stage stage(std::move(layers), recompute, 1);
    kernels::KernelContext kernels;
    (void)stage.forward(0, bundle_of(random_tensor({kRows, kWidth}, 1)), context(kernels, 0));
    Tensor dy = random_tensor({kRows, kWidth}, 2);
    const int64_t activation = static_cast<int64_t>(dy.bytes());
    MemoryAccount& account = MemoryAccount::process();
    const int64_t before = account.live_bytes();
    account.reset_peak();
    const Bundle dx = stage.backward(0, bundle_of(std::move(dy)), context(kernels, 0));
    const int64_t above = account.peak_bytes() - before;
    // Per-layer recompute re-runs the forward from the kept input first (its saved input copy).
    const int64_t expected = recompute == plan::Recompute::kPerLayer ? 2 * activation : activation;
    EXPECT_GE(above, expected);
    EXPECT_LT(above, expected + activation / 2) << "recompute " << static_cast<int>(recompute);
  }
}

// Floats per example a layer keeps for its backward, predicted from its kind alone: Linear and
// ReLU keep their input, Dropout regenerates its mask and keeps nothing.
int64_t predicted_saved_floats(std::string_view kind, const Shape& input) {
  if (kind == "linear" || kind == "relu") return input.numel();
  if (kind == "dropout") return 0;
  ADD_FAILURE() << "no prediction for layer kind " << kind;
  return 0;
}

// Bytes a micro-batch of `rows` examples keeps when nothing is recomputed.
size_t predicted_full_bytes(const Stage& stage, int64_t rows) {
  Shape shape{kIn};
  int64_t floats = 0;
  for (const auto& layer : stage.layers()) {
    floats += predicted_saved_floats(layer->kind(), shape);
    shape = layer->output_shape();
  }
  return static_cast<size_t>(floats * rows) * sizeof(float);
}

constexpr int kMicroBatches = 3;
constexpr int64_t kRows = 4;

// Forwards micro-batches 0..M-1 of kRows rows, returning stored_bytes() after each; then runs
// every backward (ascending) and checks that nothing stays stored.
std::vector<size_t> stored_bytes_after_each_forward(Stage& stage) {
  kernels::KernelContext kernels;
  std::vector<size_t> stored;
  for (int m = 0; m < kMicroBatches; ++m) {
    stage.forward(m, bundle_of(random_tensor({kRows, kIn}, m)), context(kernels, m * kRows));
    stored.push_back(stage.stored_bytes());
  }
  EXPECT_EQ(stage.peak_stored_bytes(), stored.back());
  for (int m = 0; m < kMicroBatches; ++m) {
    stage.backward(m, bundle_of(random_tensor({kRows, kOut}, 100 + m)),
                   context(kernels, m * kRows));
  }
  EXPECT_EQ(stage.stored_bytes(), 0u);
  EXPECT_EQ(stage.peak_stored_bytes(), stored.back());
  return stored;
}

const size_t kInputBytes = static_cast<size_t>(kRows * kIn) * sizeof(float);

TEST(Stage, PredictionOfSavedBytesCountsLinearAndReluInputsOnly) {
  const auto stage = make_stage(plan::Recompute::kNever, kMicroBatches);
  // Linear keeps [4, 6], ReLU [4, 5], Dropout nothing, Linear [4, 5].
  EXPECT_EQ(predicted_full_bytes(*stage, kRows), static_cast<size_t>(4 * (6 + 5 + 5) * 4));
}

TEST(Stage, RecomputeAlwaysStoresOnlyTheBoundaryInputs) {
  const auto stage = make_stage(plan::Recompute::kAlways, kMicroBatches);
  const std::vector<size_t> stored = stored_bytes_after_each_forward(*stage);
  for (int m = 0; m < kMicroBatches; ++m) {
    EXPECT_EQ(stored[static_cast<size_t>(m)], static_cast<size_t>(m + 1) * kInputBytes) << m;
  }
}

TEST(Stage, RecomputeNeverStoresWhatEveryLayerSaves) {
  const auto stage = make_stage(plan::Recompute::kNever, kMicroBatches);
  const size_t full = predicted_full_bytes(*stage, kRows);
  const std::vector<size_t> stored = stored_bytes_after_each_forward(*stage);
  for (int m = 0; m < kMicroBatches; ++m) {
    EXPECT_EQ(stored[static_cast<size_t>(m)], static_cast<size_t>(m + 1) * full) << m;
  }
}

TEST(Stage, RecomputeExceptLastStoresInputsAndTheLastMicroBatchInFull) {
  const auto stage = make_stage(plan::Recompute::kExceptLast, kMicroBatches);
  const size_t full = predicted_full_bytes(*stage, kRows);
  const std::vector<size_t> stored = stored_bytes_after_each_forward(*stage);
  EXPECT_EQ(stored[0], kInputBytes);
  EXPECT_EQ(stored[1], 2 * kInputBytes);
  EXPECT_EQ(stored[2], (kMicroBatches - 1) * kInputBytes + full);
}

TEST(Stage, RecomputesReportsWhichMicroBatchesAreRecomputed) {
  EXPECT_TRUE(make_stage(plan::Recompute::kAlways, 3)->recomputes(2));
  EXPECT_FALSE(make_stage(plan::Recompute::kNever, 3)->recomputes(0));
  const auto except_last = make_stage(plan::Recompute::kExceptLast, 3);
  EXPECT_TRUE(except_last->recomputes(0));
  EXPECT_TRUE(except_last->recomputes(1));
  EXPECT_FALSE(except_last->recomputes(2));
}

TEST(Stage, PeakTracksTheMostMicroBatchesInFlight) {
  kernels::KernelContext kernels;
  const auto stage = make_stage(plan::Recompute::kNever, 3);
  const size_t full = predicted_full_bytes(*stage, kRows);
  auto forward = [&](int m) {
    stage->forward(m, bundle_of(random_tensor({kRows, kIn}, m)), context(kernels, m * kRows));
  };
  auto backward = [&](int m) {
    stage->backward(m, bundle_of(random_tensor({kRows, kOut}, 100 + m)),
                    context(kernels, m * kRows));
  };
  // 1F1B-like order: at most two micro-batches are stored at once.
  forward(0);
  forward(1);
  backward(0);
  EXPECT_EQ(stage->stored_bytes(), full);
  forward(2);
  backward(1);
  backward(2);
  EXPECT_EQ(stage->stored_bytes(), 0u);
  EXPECT_EQ(stage->peak_stored_bytes(), 2 * full);
  stage->reset_peak();
  EXPECT_EQ(stage->peak_stored_bytes(), 0u);
}

TEST(Stage, EvaluateStoresNothing) {
  kernels::KernelContext kernels;
  const auto stage = make_stage(plan::Recompute::kNever, 1);
  nn::LayerContext ctx = context(kernels, 0);
  ctx.training = false;
  Bundle x = bundle_of(random_tensor({kRows, kIn}, 0));
  const Bundle y = stage->evaluate(x, ctx);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y.front().shape(), (Shape{kRows, kOut}));
  EXPECT_EQ(stage->stored_bytes(), 0u);
  EXPECT_EQ(stage->peak_stored_bytes(), 0u);
}

TEST(Stage, RecomputePerLayerStoresEveryLayersInput) {
  const auto stage = make_stage(plan::Recompute::kPerLayer, kMicroBatches);
  // The inputs of Linear [4, 6], ReLU [4, 5], Dropout [4, 5] and Linear [4, 5].
  const auto inputs = static_cast<size_t>(kRows * (kIn + 3 * kHidden)) * sizeof(float);
  const std::vector<size_t> stored = stored_bytes_after_each_forward(*stage);
  for (int m = 0; m < kMicroBatches; ++m) {
    EXPECT_EQ(stored[static_cast<size_t>(m)], static_cast<size_t>(m + 1) * inputs) << m;
  }
  EXPECT_FALSE(stage->recomputes(0));  // one layer at a time, never the whole stage
}

TEST(Stage, NeedsAResolvedRecomputeMode) {
  EXPECT_THROW(make_stage(plan::Recompute::kAuto, 1), Error);
}

struct Gradients {
  std::vector<float> params;
  std::vector<Bundle> inputs;  // one per micro-batch
};

// How run_micro_batches runs the backwards: whole, or split into backward_input (I) and
// backward_weight (W), each W one I later (I0 I1 W0 I2 W1 ... W(M-1)), as zb_h1 delays them.
enum class Backwards { kWhole, kSplit };

// How run_micro_batches starts the step: from zeroed gradients (and every backward adds), or
// from NaN gradients readied by zero_grads_for_step (whose linear layers then overwrite theirs).
enum class StepStart { kZeroed, kStale };

// Forwards micro-batches of the given row counts (consecutive examples of one mini-batch), then
// runs their backwards in ascending order, each weight-gradient group's product after the
// backward (or W) of its last micro-batch, as make_program places it; returns the accumulated
// parameter gradients and the input gradient of every micro-batch.
Gradients run_micro_batches(plan::Recompute recompute, const std::vector<int64_t>& rows,
                            plan::WeightGrads weight_grads = plan::WeightGrads::kAccumulate,
                            StepStart start = StepStart::kZeroed,
                            Backwards backwards = Backwards::kWhole) {
  kernels::KernelContext kernels;
  const int num_micro_batches = static_cast<int>(rows.size());
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  const Tensor x = random_tensor({total, kIn}, 1);
  const Tensor dy = random_tensor({total, kOut}, 2);
  const auto stage = make_stage(recompute, num_micro_batches, 0.3, weight_grads);
  if (start == StepStart::kStale) {
    for (const nn::ParamBuffer::Entry& entry : stage->params().entries()) {  // (not the padding)
      if (!entry.trainable) continue;
      std::fill_n(stage->params().grads().data() + entry.offset, entry.shape.numel(),
                  std::nanf(""));
    }
    stage->zero_grads_for_step();
  }
  std::vector<int64_t> first(rows.size(), 0);
  for (size_t m = 1; m < rows.size(); ++m) first[m] = first[m - 1] + rows[m - 1];
  for (int m = 0; m < num_micro_batches; ++m) {
    const auto i = static_cast<size_t>(m);
    stage->forward(m, bundle_of(x.slice_rows(first[i], rows[i])), context(kernels, first[i]));
  }
  const plan::WeightGroups groups =
      plan::weight_groups(weight_grads, num_micro_batches, std::min(2, num_micro_batches));
  // After micro-batch m's last gradient op: its group's product where it ends a group.
  const auto copied = [&](int m) {
    if (groups.deferred() && m == groups.last(groups.group_of(m))) {
      stage->finish_step_grads(context(kernels, first[static_cast<size_t>(m)]), m);
    }
  };
  Gradients grads;
  for (int m = 0; m < num_micro_batches; ++m) {
    const auto i = static_cast<size_t>(m);
    if (backwards == Backwards::kWhole) {
      grads.inputs.push_back(stage->backward(m, bundle_of(dy.slice_rows(first[i], rows[i])),
                                             context(kernels, first[i])));
      copied(m);
      continue;
    }
    grads.inputs.push_back(stage->backward_input(m, bundle_of(dy.slice_rows(first[i], rows[i])),
                                                 context(kernels, first[i])));
    if (m > 0) {
      stage->backward_weight(m - 1, context(kernels, first[i - 1]));
      copied(m - 1);
    }
  }
  if (backwards == Backwards::kSplit) {
    stage->backward_weight(num_micro_batches - 1, context(kernels, first.back()));
    copied(num_micro_batches - 1);
  }
  const auto span = stage->params().grads();
  grads.params.assign(span.begin(), span.end());
  return grads;
}

void expect_bit_identical(const Gradients& a, const Gradients& b) {
  ASSERT_EQ(a.params.size(), b.params.size());
  EXPECT_EQ(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)), 0);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t m = 0; m < a.inputs.size(); ++m) {
    ASSERT_EQ(a.inputs[m].at(0).shape(), b.inputs[m].at(0).shape()) << m;
    EXPECT_EQ(std::memcmp(a.inputs[m][0].data(), b.inputs[m][0].data(), a.inputs[m][0].bytes()), 0)
        << m;
  }
}

TEST(Stage, RecomputeChangesNoGradientBit) {
  const std::vector<int64_t> rows = {4, 4, 4};
  const Gradients never = run_micro_batches(plan::Recompute::kNever, rows);
  // The gradients are not trivially zero and dropout actually zeroed something.
  EXPECT_TRUE(
      std::any_of(never.params.begin(), never.params.end(), [](float g) { return g != 0; }));
  ASSERT_EQ(never.inputs.size(), 3u);
  EXPECT_EQ(never.inputs[0].at(0).shape(), (Shape{4, kIn}));
  expect_bit_identical(run_micro_batches(plan::Recompute::kAlways, rows), never);
  expect_bit_identical(run_micro_batches(plan::Recompute::kExceptLast, rows), never);
  expect_bit_identical(run_micro_batches(plan::Recompute::kPerLayer, rows), never);
}

// Equal values (0.0 == -0.0: a first write may give -0 where adding to +0 gives +0).
void expect_equal_values(std::span<const float> actual, std::span<const float> expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_EQ(actual[i], expected[i]) << i;
}

TEST(Stage, LinearLayersOverwriteTheirUnzeroedGradientsWithTheSameValues) {
  const std::vector<int64_t> rows = {4, 4, 4};
  for (plan::WeightGrads weight_grads :
       {plan::WeightGrads::kAccumulate, plan::WeightGrads::kBatched, plan::WeightGrads::kGrouped}) {
    for (plan::Recompute recompute : {plan::Recompute::kNever, plan::Recompute::kPerLayer}) {
      const Gradients zeroed = run_micro_batches(recompute, rows, weight_grads);
      const Gradients stale = run_micro_batches(recompute, rows, weight_grads, StepStart::kStale);
      expect_equal_values(stale.params, zeroed.params);
      for (size_t m = 0; m < rows.size(); ++m) {
        expect_equal_values(stale.inputs[m].at(0).span(), zeroed.inputs[m].at(0).span());
      }
    }
  }
}

// Zero-bubble schedules: I then W, in ascending micro-batch order, add the same gradient bits
// as whole backwards, whatever the recompute mode, the weight-gradient mode and the start.
TEST(Stage, SplitBackwardsGiveTheWholeBackwardsGradientBits) {
  const std::vector<int64_t> rows = {4, 4, 4};
  for (plan::WeightGrads weight_grads :
       {plan::WeightGrads::kAccumulate, plan::WeightGrads::kBatched, plan::WeightGrads::kGrouped}) {
    for (StepStart start : {StepStart::kZeroed, StepStart::kStale}) {
      for (plan::Recompute recompute : {plan::Recompute::kNever, plan::Recompute::kAlways,
                                        plan::Recompute::kExceptLast, plan::Recompute::kPerLayer}) {
        SCOPED_TRACE(fmt::format("{} {} {}", plan::to_string(weight_grads),
                                 plan::to_string(recompute),
                                 start == StepStart::kStale ? "stale" : "zeroed"));
        expect_bit_identical(
            run_micro_batches(recompute, rows, weight_grads, start, Backwards::kSplit),
            run_micro_batches(recompute, rows, weight_grads, start));
      }
    }
  }
}

// Between I and W a micro-batch keeps each linear layer's input and output gradient, and W frees
// them; the other layers keep nothing.
TEST(Stage, SplitBackwardKeepsTheLinearLayersInputsAndOutputGradientsUntilW) {
  constexpr int64_t kRows = 4;
  auto stage = make_stage(plan::Recompute::kNever, 2);
  kernels::KernelContext kernels;
  (void)stage->forward(0, bundle_of(random_tensor({kRows, kIn}, 1)), context(kernels, 0));
  (void)stage->forward(1, bundle_of(random_tensor({kRows, kIn}, 2)), context(kernels, kRows));
  const size_t both = stage->stored_bytes();
  (void)stage->backward_input(0, bundle_of(random_tensor({kRows, kOut}, 3)), context(kernels, 0));
  const size_t kept = kRows * (kIn + kHidden + kHidden + kOut) * sizeof(float);
  EXPECT_EQ(stage->stored_bytes(), both / 2 + kept);
  stage->backward_weight(0, context(kernels, 0));
  EXPECT_EQ(stage->stored_bytes(), both / 2);
  // (The output gradients make what I0 kept larger than the stash it replaced.)
  EXPECT_EQ(stage->peak_stored_bytes(), std::max(both, both / 2 + kept));
}

TEST(Stage, WeightGradientsBeforeTheirInputGradientOrOutOfOrderThrow) {
  auto stage = make_stage(plan::Recompute::kNever, 2);
  kernels::KernelContext kernels;
  EXPECT_THROW(stage->backward_weight(0, context(kernels, 0)), Error);
  for (int m = 0; m < 2; ++m) {
    (void)stage->forward(m, bundle_of(random_tensor({2, kIn}, 1)), context(kernels, 2 * m));
  }
  for (int m = 0; m < 2; ++m) {
    (void)stage->backward_input(m, bundle_of(random_tensor({2, kOut}, 3)), context(kernels, 2 * m));
  }
  EXPECT_THROW(stage->backward_weight(1, context(kernels, 2)), Error);
  stage->backward_weight(0, context(kernels, 0));
  stage->backward_weight(1, context(kernels, 2));
}

TEST(Stage, ZeroGradsForStepLeavesTheLinearLayersGradientsToTheirFirstWrite) {
  const std::vector<int64_t> rows = {4, 4};
  auto stage = make_stage(plan::Recompute::kNever, 2);
  std::ranges::fill(stage->params().grads(), 7.0f);
  stage->zero_grads_for_step();
  // Only linear layers have parameters here: none was zeroed.
  for (float g : stage->params().grads()) ASSERT_TRUE(g == 7.0f || g == 0.0f);  // 0: padding
  EXPECT_TRUE(std::ranges::any_of(stage->params().grads(), [](float g) { return g == 7.0f; }));
}

TEST(Stage, DropoutMasksTheForwardInTraining) {
  kernels::KernelContext kernels;
  const Tensor x = random_tensor({8, kIn}, 1);
  const auto with_dropout = make_stage(plan::Recompute::kNever, 1, 0.3);
  const auto without = make_stage(plan::Recompute::kNever, 1, 0.0);
  const Tensor a = with_dropout->forward(0, bundle_of(x), context(kernels, 0)).at(0);
  const Tensor b = without->forward(0, bundle_of(x), context(kernels, 0)).at(0);
  int differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i) differ += a[i] != b[i];
  EXPECT_GT(differ, 0);
}

void expect_close(std::span<const float> actual, std::span<const float> expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    const float scale = std::max({std::abs(actual[i]), std::abs(expected[i]), 1e-2f});
    EXPECT_NEAR(actual[i], expected[i], 1e-5f * scale) << i;
  }
}

TEST(Stage, TwoMicroBatchesAccumulateTheFullBatchGradient) {
  for (plan::Recompute recompute :
       {plan::Recompute::kAlways, plan::Recompute::kNever, plan::Recompute::kPerLayer}) {
    const Gradients split = run_micro_batches(recompute, {4, 4});
    const Gradients whole = run_micro_batches(recompute, {8});
    expect_close(split.params, whole.params);
    ASSERT_EQ(split.inputs.size(), 2u);
    const Tensor& dx = whole.inputs[0].at(0);
    expect_close(split.inputs[0].at(0).span(), dx.slice_rows(0, 4).span());
    expect_close(split.inputs[1].at(0).span(), dx.slice_rows(4, 4).span());
  }
}

TEST(Stage, BackwardBeforeForwardThrows) {
  kernels::KernelContext kernels;
  const auto stage = make_stage(plan::Recompute::kAlways, 2);
  EXPECT_THROW(stage->backward(0, bundle_of(random_tensor({kRows, kOut}, 0)), context(kernels, 0)),
               Error);
}

TEST(Stage, BackwardTwiceThrows) {
  kernels::KernelContext kernels;
  const auto stage = make_stage(plan::Recompute::kNever, 1);
  stage->forward(0, bundle_of(random_tensor({kRows, kIn}, 0)), context(kernels, 0));
  stage->backward(0, bundle_of(random_tensor({kRows, kOut}, 1)), context(kernels, 0));
  EXPECT_THROW(stage->backward(0, bundle_of(random_tensor({kRows, kOut}, 1)), context(kernels, 0)),
               Error);
}

TEST(Stage, ForwardingTheSameMicroBatchTwiceThrows) {
  kernels::KernelContext kernels;
  const auto stage = make_stage(plan::Recompute::kExceptLast, 2);
  stage->forward(1, bundle_of(random_tensor({kRows, kIn}, 0)), context(kernels, kRows));
  const size_t stored = stage->stored_bytes();
  EXPECT_THROW(
      stage->forward(1, bundle_of(random_tensor({kRows, kIn}, 0)), context(kernels, kRows)), Error);
  EXPECT_EQ(stage->stored_bytes(), stored);
}

// BatchNorm2d → ResidualBlock (two more batch norms) on [2, 3, 3] images, global layers 1..2.
const Shape kImage{2, 3, 3};

std::unique_ptr<Stage> make_batch_norm_stage(plan::Recompute recompute, int num_micro_batches) {
  std::vector<std::unique_ptr<nn::Layer>> layers;
  layers.push_back(std::make_unique<nn::BatchNorm2d>(kFirstLayer, kImage));
  layers.push_back(std::make_unique<nn::ResidualBlock>(kFirstLayer + 1, kImage, kImage[0]));
  auto stage = std::make_unique<Stage>(std::move(layers), recompute, num_micro_batches);
  stage->params().initialize(17);
  return stage;
}

// Global micro-batch g of a mini-batch of images.
Tensor image_micro_batch(int64_t g) { return random_tensor(kImage.batched(kRows), 200 + g); }

// Runs a training step's forwards (in the given order) and backwards (ascending) of micro-batches
// `global[0], global[1], ...` as this stage's micro-batches 0, 1, ...
void run_images(Stage& stage, const std::vector<int64_t>& global,
                const std::vector<int>& forward_order) {
  kernels::KernelContext kernels;
  for (int m : forward_order) {
    const int64_t g = global[static_cast<size_t>(m)];
    stage.forward(m, bundle_of(image_micro_batch(g)), context(kernels, g * kRows));
  }
  for (int m = 0; m < std::ssize(global); ++m) {
    const int64_t g = global[static_cast<size_t>(m)];
    stage.backward(m, bundle_of(random_tensor(kImage.batched(kRows), 300 + g)),
                   context(kernels, g * kRows));
  }
}

std::vector<float> buffers_of(const Stage& stage) {
  return {stage.params().buffers().begin(), stage.params().buffers().end()};
}

TEST(Stage, KeepsOneBufferUpdatePerMicroBatchFromFirstForwardsInMicroBatchOrder) {
  const auto recomputed = make_batch_norm_stage(plan::Recompute::kAlways, 3);
  const std::vector<float> initial = buffers_of(*recomputed);
  EXPECT_EQ(recomputed->buffer_update_size(), 3 * (2 * 2 + 1));  // three batch norms
  run_images(*recomputed, {0, 1, 2}, {1, 0, 2});
  // Forwards and recomputes leave the buffers alone until the updates are applied.
  EXPECT_EQ(buffers_of(*recomputed), initial);
  const std::vector<float> updates = recomputed->take_buffer_updates();
  EXPECT_EQ(std::ssize(updates), 3 * recomputed->buffer_update_size());
  EXPECT_TRUE(recomputed->take_buffer_updates().empty());
  // The same as without recomputation, forwarded in order.
  const auto stored = make_batch_norm_stage(plan::Recompute::kNever, 3);
  run_images(*stored, {0, 1, 2}, {0, 1, 2});
  EXPECT_EQ(stored->take_buffer_updates(), updates);
}

// Input gradients of the batch-norm stage's micro-batches and its parameter gradients.
std::vector<float> image_gradients(Stage& stage) {
  kernels::KernelContext kernels;
  std::vector<float> out;
  for (int m = 0; m < 3; ++m)
    stage.forward(m, bundle_of(image_micro_batch(m)), context(kernels, m * kRows));
  for (int m = 0; m < 3; ++m) {
    const Bundle dx = stage.backward(m, bundle_of(random_tensor(kImage.batched(kRows), 300 + m)),
                                     context(kernels, m * kRows));
    out.insert(out.end(), dx.at(0).span().begin(), dx.at(0).span().end());
  }
  out.insert(out.end(), stage.params().grads().begin(), stage.params().grads().end());
  return out;
}

TEST(Stage, PerLayerRecomputeOfBatchNormsGivesTheFirstForwardsUpdatesAndGradients) {
  const auto per_layer = make_batch_norm_stage(plan::Recompute::kPerLayer, 3);
  const auto stored = make_batch_norm_stage(plan::Recompute::kNever, 3);
  const std::vector<float> initial = buffers_of(*per_layer);
  const std::vector<float> grads = image_gradients(*per_layer);
  // The recomputes record no update and change no buffer before the step applies them.
  EXPECT_EQ(buffers_of(*per_layer), initial);
  EXPECT_EQ(image_gradients(*stored), grads);  // bit for bit: EXPECT_EQ on floats
  EXPECT_EQ(per_layer->take_buffer_updates(), stored->take_buffer_updates());
}

TEST(Stage, ReplicasApplyingAllUpdatesInGlobalOrderMatchOneStageRunningEveryMicroBatch) {
  const auto whole = make_batch_norm_stage(plan::Recompute::kExceptLast, 4);
  run_images(*whole, {0, 1, 2, 3}, {0, 1, 2, 3});
  whole->apply_buffer_updates(whole->take_buffer_updates());
  // Two replicas of two micro-batches each: replica r's micro-batch j is global 2r + j.
  const auto first = make_batch_norm_stage(plan::Recompute::kExceptLast, 2);
  const auto second = make_batch_norm_stage(plan::Recompute::kExceptLast, 2);
  run_images(*first, {0, 1}, {0, 1});
  run_images(*second, {2, 3}, {0, 1});
  std::vector<float> all = first->take_buffer_updates();
  const std::vector<float> second_updates = second->take_buffer_updates();
  all.insert(all.end(), second_updates.begin(), second_updates.end());
  first->apply_buffer_updates(all);
  second->apply_buffer_updates(all);
  EXPECT_NE(buffers_of(*whole), buffers_of(*make_batch_norm_stage(plan::Recompute::kNever, 1)));
  EXPECT_EQ(buffers_of(*first), buffers_of(*whole));
  EXPECT_EQ(buffers_of(*second), buffers_of(*whole));
}

TEST(Stage, ForwardingAMicroBatchAgainBeforeItsBufferUpdateIsTakenThrows) {
  const auto stage = make_batch_norm_stage(plan::Recompute::kAlways, 1);
  run_images(*stage, {0}, {0});
  kernels::KernelContext kernels;
  EXPECT_THROW(stage->forward(0, bundle_of(image_micro_batch(0)), context(kernels, 0)), Error);
  stage->take_buffer_updates();
  stage->forward(0, bundle_of(image_micro_batch(0)), context(kernels, 0));
}

TEST(Stage, ApplyingPartOfAnUpdateThrows) {
  const auto stage = make_batch_norm_stage(plan::Recompute::kAlways, 1);
  run_images(*stage, {0}, {0});
  const std::vector<float> updates = stage->take_buffer_updates();
  EXPECT_THROW(stage->apply_buffer_updates(std::span(updates).first(updates.size() - 1)), Error);
  // A stage without buffers takes no updates.
  EXPECT_EQ(make_stage(plan::Recompute::kNever, 1)->buffer_update_size(), 0);
  EXPECT_THROW(make_stage(plan::Recompute::kNever, 1)->apply_buffer_updates(updates), Error);
}

TEST(Stage, NeedsAtLeastOneLayer) { EXPECT_THROW(Stage({}, plan::Recompute::kAlways, 1), Error); }

}  // namespace
}  // namespace mpipe::pipeline
