// calibrate_gemm_rate: it times the linear shape that carries most of the model's FLOPs, at the
// micro-batch's rows times an example's positions, and the 1024^3 GEMM without linear layers;
// calibrate_memory_rate: the optimizer step's traffic.
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

TEST(PlanCalibration, TimesTheLinearShapeWithMostFlopsAtTheMicroBatchRows) {
  // 16 -> 96 once (1536 FLOPs' worth per example), then 96 -> 96 twice (18432): the second wins.
  model::ModelSpec spec;
  spec.layers = {layer("linear", 96), layer("relu", 0), layer("linear", 96), layer("linear", 96)};
  kernels::KernelContext kernels;
  const CalibratedRate rate =
      calibrate_gemm_rate(model::plan_model(spec, Shape{16}), 8, 4, kernels);
  EXPECT_EQ(rate.measured, "linear 8 x 96 -> 96");
  EXPECT_GT(rate.flops_per_s, 0.0);
  EXPECT_GT(rate.input_gradient_flops_per_s, 0.0);
  EXPECT_GT(rate.weight_flops_per_s, 0.0);
  EXPECT_GT(rate.batched_weight_flops_per_s, 0.0);
}

TEST(PlanCalibration, CountsEveryPositionOfAnExampleAsARow) {
  model::ModelSpec spec;
  spec.layers = {layer("linear", 32)};
  kernels::KernelContext kernels;
  const CalibratedRate rate =
      calibrate_gemm_rate(model::plan_model(spec, Shape{5, 24}), 4, 1, kernels);
  EXPECT_EQ(rate.measured, "linear 20 x 24 -> 32");
}

TEST(PlanCalibration, WithoutALinearLayerTimesTheSquareGemm) {
  model::ModelSpec spec;
  spec.layers = {layer("relu", 0)};
  kernels::KernelContext kernels;
  const CalibratedRate rate =
      calibrate_gemm_rate(model::plan_model(spec, Shape{16}), 8, 2, kernels);
  EXPECT_EQ(rate.measured, "1024^3 GEMM");
  EXPECT_GT(rate.flops_per_s, 0.0);
  EXPECT_EQ(rate.weight_flops_per_s, rate.flops_per_s);
}

TEST(PlanCalibration, TimesTheMemoryTrafficOfEachOptimizersStep) {
  for (const auto kind : {optim::OptimizerKind::kSgd, optim::OptimizerKind::kAdamW}) {
    optim::OptimizerConfig optimizer;
    optimizer.kind = kind;
    const double rate = calibrate_memory_rate(optimizer, 1 << 20);
    EXPECT_TRUE(std::isfinite(rate) && rate > 0.0) << rate;
  }
}

}  // namespace
}  // namespace mpipe::train
