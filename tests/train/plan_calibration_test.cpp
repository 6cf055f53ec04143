// calibrate_gemm_rate: it times the linear shape that carries most of the model's FLOPs, at the
// micro-batch's rows times an example's positions (a deferred weight gradient at its group's
// rows) through as many copies of its weight as the model's parameters fill, and the 1024^3 GEMM
// without linear layers;
// calibrate_memory_rate: the optimizer step's traffic; calibrate_elementwise_rate: a ReLU's;
// calibrate_machine: all three, per thread.
#include "train/plan_calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/layer_spec.h"

namespace mpipe::train {
namespace {

model::LayerSpec layer(const std::string& kind, int64_t units) {
  if (units == 0) return testing::layer_spec(kind, {});
  return testing::layer_spec(kind, {{"units", units}});
}

// calibrate_gemm_rate of a model of `layers` on `input`, on a kernel context of its own.
CalibratedRate gemm_rate_of(std::vector<model::LayerSpec> layers, const Shape& input,
                            int64_t micro_batch_rows, int num_micro_batches,
                            Calibration length = Calibration::kFull) {
  model::ModelSpec spec;
  spec.layers = std::move(layers);
  kernels::KernelContext kernels;
  return calibrate_gemm_rate(model::plan_model(spec, input), micro_batch_rows, num_micro_batches,
                             kernels, length);
}

TEST(PlanCalibration, TimesTheLinearShapeWithMostFlopsAtTheMicroBatchRows) {
  // 16 -> 96 once (1536 FLOPs' worth per example), then 96 -> 96 twice (18432): the second wins.
  const CalibratedRate rate = gemm_rate_of(
      {layer("linear", 96), layer("relu", 0), layer("linear", 96), layer("linear", 96)}, Shape{16},
      8, 4);
  EXPECT_EQ(rate.measured, "linear 8 x 96 -> 96, weight gradient over 32 rows");
  EXPECT_GT(rate.flops_per_s, 0.0);
  EXPECT_GT(rate.input_gradient_flops_per_s, 0.0);
  EXPECT_GT(rate.weight_flops_per_s, 0.0);
  EXPECT_GT(rate.batched_weight_flops_per_s, 0.0);
}

TEST(PlanCalibration, TheQuickCalibrationTimesTheDeferredWeightGradientAtItsGroupsRows) {
  // A group of 4 micro-batches of 8 rows: one product over 32 rows (before, the quick calibration
  // let the 8-row product's rate stand for it; the full one: the first test).
  const CalibratedRate rate =
      gemm_rate_of({layer("linear", 64)}, Shape{32}, 8, 4, Calibration::kQuick);
  EXPECT_EQ(rate.batched_rows, 32);
  EXPECT_EQ(rate.measured, "linear 8 x 32 -> 64, weight gradient over 32 rows");
  EXPECT_GT(rate.batched_weight_flops_per_s, 0.0);
}

TEST(PlanCalibration, WithoutADeferredProductTheAccumulatingRateStandsForIt) {
  const CalibratedRate rate =
      gemm_rate_of({layer("linear", 64)}, Shape{32}, 8, 1, Calibration::kQuick);
  EXPECT_EQ(rate.batched_rows, 8);
  EXPECT_EQ(rate.measured, "linear 8 x 32 -> 64");
  EXPECT_EQ(rate.batched_weight_flops_per_s, rate.weight_flops_per_s);
}

TEST(PlanCalibration, CountsEveryPositionOfAnExampleAsARow) {
  const CalibratedRate rate = gemm_rate_of({layer("linear", 32)}, Shape{5, 24}, 4, 1);
  EXPECT_EQ(rate.measured, "linear 20 x 24 -> 32");
}

TEST(PlanCalibration, CyclesThroughCopiesOfTheWeightAsLargeAsTheModelsParameters) {
  // 12 x Linear(256): 12 x (65536 + 256) parameters and their gradients, 6.3 MB, are 12 copies
  // of the 256 x 256 weight and its gradient (before, 64 MiB of them: 64 copies). A 24-block
  // scaling_mlp's 16-row products ran 16-42% slower among its 24 weights than among 8, and two
  // ranks of 12 blocks each beside each other as slow as one of 24: the products cycle through
  // the whole model's weights, which the ranks on a host share the caches for.
  const CalibratedRate rate = gemm_rate_of(std::vector<model::LayerSpec>(12, layer("linear", 256)),
                                           Shape{256}, 4, 1, Calibration::kQuick);
  EXPECT_EQ(rate.weight_copies, 12);
  EXPECT_GT(rate.flops_per_s, 0.0);
}

TEST(PlanCalibration, WithoutALinearLayerTimesTheSquareGemm) {
  const CalibratedRate rate = gemm_rate_of({layer("relu", 0)}, Shape{16}, 8, 2);
  EXPECT_EQ(rate.measured, "1024^3 GEMM");
  EXPECT_GT(rate.flops_per_s, 0.0);
  EXPECT_EQ(rate.weight_flops_per_s, rate.flops_per_s);
  EXPECT_EQ(rate.weight_copies, 0);
}

TEST(PlanCalibration, ANetworkOfConvolutionsTimesTheSquareGemmNotItsLinearHead) {
  const CalibratedRate rate = gemm_rate_of(
      {testing::layer_spec(
           "conv2d", {{"channels", int64_t{8}}, {"kernel", int64_t{3}}, {"padding", int64_t{1}}}),
       testing::layer_spec("flatten", {}), layer("linear", 10)},
      Shape{4, 8, 8}, 4, 1, Calibration::kQuick);
  EXPECT_EQ(rate.measured, "1024^3 GEMM");
}

TEST(PlanCalibration, TimesTheMemoryTrafficOfEachOptimizersStep) {
  for (const auto kind : {optim::OptimizerKind::kSgd, optim::OptimizerKind::kAdamW}) {
    optim::OptimizerConfig optimizer;
    optimizer.kind = kind;
    const double rate = calibrate_memory_rate(optimizer, 1 << 20);
    EXPECT_TRUE(std::isfinite(rate) && rate > 0.0) << rate;
  }
}

TEST(PlanCalibration, TimesTheElementWiseTrafficOfAReluForwardAndBackward) {
  kernels::KernelContext kernels;
  for (const int64_t rows : {1, 32}) {
    const double rate = calibrate_elementwise_rate(rows, 1024, 1024 * 1024, 0.001, kernels);
    EXPECT_TRUE(std::isfinite(rate) && rate > 0.0) << rows << ": " << rate;
  }
}

TEST(PlanCalibration, TheQuickMachineRatesArePerThreadAndKeepTheLinks) {
  model::ModelSpec spec;
  spec.layers = {layer("linear", 96), layer("relu", 0), layer("linear", 96)};
  plan::MachineRates base;
  base.threads = 2;
  base.link_bytes_per_s = 12.5e6;
  const MachineCalibration quick =
      calibrate_machine(model::plan_model(spec, Shape{16}), optim::OptimizerConfig{}, 8, 4, 2, base,
                        Calibration::kQuick);
  EXPECT_EQ(quick.gemm.measured, "linear 8 x 96 -> 96, weight gradient over 32 rows");
  EXPECT_EQ(quick.rates.threads, 2);
  EXPECT_EQ(quick.rates.link_bytes_per_s, 12.5e6);
  EXPECT_DOUBLE_EQ(quick.rates.flops_per_s, quick.gemm.flops_per_s / 2);
  EXPECT_DOUBLE_EQ(quick.rates.weight_flops_per_s, quick.gemm.weight_flops_per_s / 2);
  EXPECT_DOUBLE_EQ(quick.rates.optimizer_bytes_per_s, quick.memory_bytes_per_s / 2);
  // Element-wise work: a ReLU over the main product's output.
  EXPECT_EQ(quick.elementwise_measured, "relu over 8 x 96");
  EXPECT_GT(quick.elementwise_bytes_per_s, 0.0);
  EXPECT_DOUBLE_EQ(quick.rates.bytes_per_s, quick.elementwise_bytes_per_s / 2);
  EXPECT_DOUBLE_EQ(quick.rates.batched_weight_flops_per_s,
                   quick.gemm.batched_weight_flops_per_s / 2);
  EXPECT_GT(quick.memory_bytes_per_s, 0.0);
  EXPECT_GT(quick.seconds, 0.0);
}

TEST(PlanCalibration, TheGemmRatesStayAssumedWhereLinearLayersCarryUnderHalfTheFlops) {
  model::ModelSpec spec;
  spec.layers = {
      testing::layer_spec(
          "conv2d", {{"channels", int64_t{8}}, {"kernel", int64_t{3}}, {"padding", int64_t{1}}}),
      testing::layer_spec("flatten", {}), layer("linear", 10)};
  plan::MachineRates base;
  const MachineCalibration quick =
      calibrate_machine(model::plan_model(spec, Shape{4, 8, 8}), optim::OptimizerConfig{}, 4, 1, 1,
                        base, Calibration::kQuick);
  EXPECT_EQ(quick.gemm.measured, "GEMM rates assumed: linear layers carry 22% of the FLOPs");
  EXPECT_EQ(quick.rates.flops_per_s, base.flops_per_s);
  EXPECT_EQ(quick.rates.weight_flops_per_s, base.flops_per_s);
  EXPECT_GT(quick.rates.optimizer_bytes_per_s, 0.0);  // the optimizer step is measured all the same
  EXPECT_EQ(quick.rates.bytes_per_s, base.bytes_per_s);  // so is element-wise work's, not
  EXPECT_EQ(quick.elementwise_measured, "");
}

}  // namespace
}  // namespace mpipe::train
