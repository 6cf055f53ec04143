// The calibrated rates: the model's main linear shape and a rank's optimizer step, timed on this
// machine.
#include "train/plan_calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "kernels/gemm_peak.h"
#include "optim/optimizer.h"
#include "plan/planner.h"
#include "train/finite_check.h"
#include "train/pipeline_plan.h"

namespace mpipe::train {

CalibratedRate calibrate_gemm_rate(const model::ModelPlan& model, int64_t micro_batch_rows,
                                   int num_micro_batches, kernels::KernelContext& kernels) {
  // (m, k, n) -> the FLOPs per example of the linear layers of that shape.
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> flops_by_shape;
  for (const model::LayerPlan& layer : model.layers) {
    if (layer.kind != "linear" || layer.input.rank() == 0) continue;
    const int64_t in = layer.input.dims().back();
    const int64_t positions = layer.input.numel() / in;
    flops_by_shape[{micro_batch_rows * positions, in, layer.output.dims().back()}] +=
        layer.forward_flops;
  }
  if (flops_by_shape.empty()) {
    const double peak = kernels::measure_gemm_peak(kernels).flops_per_s;
    return {.flops_per_s = peak,
            .input_gradient_flops_per_s = peak,
            .weight_flops_per_s = peak,
            .batched_weight_flops_per_s = peak,
            .measured = "1024^3 GEMM"};
  }
  const auto [m, k, n] =
      std::max_element(flops_by_shape.begin(), flops_by_shape.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; })
          ->first;
  const kernels::LinearRates rates = kernels::measure_linear_rates(kernels, m, k, n);
  const double batched =
      num_micro_batches > 1
          ? kernels::measure_linear_rates(kernels, m * num_micro_batches, k, n).weight_gradient
          : rates.weight_gradient;
  return {.flops_per_s = rates.forward,
          .input_gradient_flops_per_s = rates.input_gradient,
          .weight_flops_per_s = rates.weight_gradient,
          .batched_weight_flops_per_s = batched,
          .measured = fmt::format("linear {} x {} -> {}", m, k, n)};
}

double calibrate_memory_rate(const optim::OptimizerConfig& optimizer, int64_t num_params) {
  const auto n = static_cast<size_t>(std::max<int64_t>(num_params, 1));
  std::vector<float> values(n, 0.5f);
  std::vector<float> grads(n);
  const std::unique_ptr<optim::Optimizer> update =
      optim::Optimizer::make(optimizer, static_cast<int64_t>(n));
  constexpr int kRepetitions = 7;  // after one that warms up
  std::vector<double> seconds;
  for (int i = 0; i <= kRepetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::fill(grads.begin(), grads.end(), 0.0f);
    check(all_finite(grads), "calibrate_memory_rate: zeroed gradients are not finite");
    update->step(values, grads, 1e-3);
    if (i > 0) {
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::nth_element(seconds.begin(), seconds.begin() + kRepetitions / 2, seconds.end());
  return plan::optimizer_passes(optimizer_slots(optimizer), false) * sizeof(float) *
         static_cast<double>(n) / seconds[kRepetitions / 2];
}

}  // namespace mpipe::train
