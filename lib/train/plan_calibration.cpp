// The measured rates: the model's main linear shape and a rank's optimizer step, timed on this
// machine.
#include "train/plan_calibration.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <numeric>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "kernels/eltwise.h"
#include "kernels/gemm_peak.h"
#include "nn/activation.h"
#include "optim/optimizer.h"
#include "plan/planner.h"
#include "train/finite_check.h"
#include "train/pipeline_plan.h"

namespace mpipe::train {

namespace {

// How long each product is timed for, how many times through its weight copies at least, and how
// long the first one runs untimed before (see Calibration: a 32-row forward read 90 GFLOP/s in a
// fresh process's first 25 ms, 101 from 125 ms on, and 97-100 from the start after 0.3 s of
// untimed products).
struct Timing {
  double min_seconds;
  int cycles;
  double warm_up_seconds;
};
Timing timing(Calibration length) {
  constexpr double kWarmUpSeconds = 0.2;
  return length == Calibration::kQuick
             ? Timing{.min_seconds = 0.02, .cycles = 1, .warm_up_seconds = kWarmUpSeconds}
             : Timing{.min_seconds = 0.1, .cycles = 3, .warm_up_seconds = kWarmUpSeconds};
}

// The median of the seconds `pass` returns (the part of it it times) over at least `repetitions`
// runs and `min_seconds`, after one untimed run (allocations, oneDNN's primitives).
template <typename Pass>
double median_seconds(const Pass& pass, size_t repetitions, double min_seconds) {
  using Clock = std::chrono::steady_clock;
  pass();
  std::vector<double> seconds;
  const Clock::time_point start = Clock::now();
  while (seconds.size() < repetitions ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    seconds.push_back(pass());
  }
  const auto middle = seconds.begin() + static_cast<std::ptrdiff_t>(seconds.size() / 2);
  std::ranges::nth_element(seconds, middle);
  return *middle;
}

}  // namespace

CalibratedRate calibrate_gemm_rate(const model::ModelPlan& model, int64_t micro_batch_rows,
                                   int num_micro_batches, kernels::KernelContext& kernels,
                                   Calibration length) {
  // (m, k, n) -> the FLOPs per example of the linear layers of that shape.
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> flops_by_shape;
  double linear_flops = 0.0, convolution_flops = 0.0;
  for (const model::LayerPlan& layer : model.layers) {
    if (layer.kind == "conv2d" || layer.kind == "residual_block" ||
        layer.kind == "separable_cell") {
      convolution_flops += layer.forward_flops;
    }
    if (layer.kind != "linear" || layer.input.rank() == 0) continue;
    linear_flops += layer.forward_flops;
    const int64_t in = layer.input.dims().back();
    const int64_t positions = layer.input.numel() / in;
    flops_by_shape[{micro_batch_rows * positions, in, layer.output.dims().back()}] +=
        layer.forward_flops;
  }
  // A convolutional network's linear head says nothing of its convolutions' rate (16 x 64 -> 10
  // read 8 GFLOP/s on fashion_mnist_cnn.yaml): the square GEMM stands for them.
  const Timing t = timing(length);
  if (flops_by_shape.empty() || convolution_flops > linear_flops) {
    const double peak = kernels::measure_gemm_peak(kernels, 1024, t.min_seconds).flops_per_s;
    return {.flops_per_s = peak,
            .input_gradient_flops_per_s = peak,
            .weight_flops_per_s = peak,
            .batched_weight_flops_per_s = peak,
            .batched_rows = 0,
            .measured = "1024^3 GEMM"};
  }
  const auto [m, k, n] =
      std::max_element(flops_by_shape.begin(), flops_by_shape.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; })
          ->first;
  // A rank's products find their weights where its other layers and the other ranks on the host
  // left them: among the model's parameters and their gradients, in the caches they share.
  const double streamed_bytes = 2.0 * sizeof(float) * static_cast<double>(model.num_params());
  // One deferred product's rows: its micro-batches' stacked.
  const int64_t batched_rows = m * std::max(1, num_micro_batches);
  const kernels::LinearRates rates =
      kernels::measure_linear_rates(kernels, m, k, n, t.min_seconds, t.cycles, t.warm_up_seconds,
                                    streamed_bytes, num_micro_batches > 1 ? batched_rows : 0);
  const double batched =
      num_micro_batches > 1 ? rates.deferred_weight_gradient : rates.weight_gradient;
  return {.flops_per_s = rates.forward,
          .input_gradient_flops_per_s = rates.input_gradient,
          .weight_flops_per_s = rates.weight_gradient,
          .batched_weight_flops_per_s = batched,
          .batched_rows = batched_rows,
          .rows = m,
          .in = k,
          .out = n,
          .weight_copies = kernels::weight_copies(streamed_bytes, k, n),
          .measured = num_micro_batches > 1
                          ? fmt::format("linear {} x {} -> {}, weight gradient over {} rows", m, k,
                                        n, batched_rows)
                          : fmt::format("linear {} x {} -> {}", m, k, n)};
}

double calibrate_memory_rate(const optim::OptimizerConfig& optimizer, int64_t num_params) {
  const auto n = static_cast<size_t>(std::max<int64_t>(num_params, 1));
  std::vector<float> values(n, 0.5f);
  std::vector<float> grads(n);
  const std::unique_ptr<optim::Optimizer> update =
      optim::Optimizer::make(optimizer, static_cast<int64_t>(n));
  const auto pass = [&] {
    const auto start = std::chrono::steady_clock::now();
    std::fill(grads.begin(), grads.end(), 0.0f);
    check(all_finite(grads), "calibrate_memory_rate: zeroed gradients are not finite");
    update->step(values, grads, 1e-3);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  constexpr size_t kRepetitions = 7;  // after one that warms up
  return plan::optimizer_passes(optimizer_slots(optimizer), false) * sizeof(float) *
         static_cast<double>(n) / median_seconds(pass, kRepetitions, 0.0);
}

double calibrate_elementwise_rate(int64_t rows, int64_t width, int64_t weight_floats,
                                  double min_seconds, kernels::KernelContext& kernels) {
  using Clock = std::chrono::steady_clock;
  nn::Activation relu(1, Shape{width}, kernels::EltwiseKind::kRelu);
  const nn::LayerNeeds needs = relu.needs();
  const double bytes = static_cast<double>(rows) * (needs.forward_traffic_bytes.value_or(0.0) +
                                                    needs.backward_traffic_bytes.value_or(0.0));
  const nn::LayerContext ctx{.kernels = kernels, .need_input_grad = true};
  Tensor dy(Shape{rows, width});
  dy.fill(0.01f);
  const std::vector<float> weight(static_cast<size_t>(std::max<int64_t>(weight_floats, 1)), 1.0f);
  volatile float read = 0.0f;  // (the weight's sum, kept so that it is read)
  // A forward handed its input, as a stage's layers are, and its backward, after the weight read
  // (untimed) that a product between them streams through the caches.
  const auto pass = [&] {
    Tensor x(Shape{rows, width});
    x.fill(0.5f);
    read = std::accumulate(weight.begin(), weight.end(), 0.0f);
    const Clock::time_point begin = Clock::now();
    nn::Forward forward = relu.forward_consuming(std::move(x), ctx);
    const Tensor dx = relu.backward(dy, forward.saved, ctx);
    return std::chrono::duration<double>(Clock::now() - begin).count();
  };
  constexpr size_t kLeastRepetitions = 5;
  return bytes / median_seconds(pass, kLeastRepetitions, min_seconds);
}

MachineCalibration calibrate_machine(const model::ModelPlan& model,
                                     const optim::OptimizerConfig& optimizer,
                                     int64_t micro_batch_rows, int num_micro_batches, int num_ranks,
                                     const plan::MachineRates& base, Calibration length) {
  // Beyond the caches whatever the model (16 MiB of values), and no longer than that needs.
  constexpr int64_t kQuickParams = int64_t{1} << 22;
  const auto start = std::chrono::steady_clock::now();
  const int threads = omp_get_max_threads();
  omp_set_num_threads(base.threads);
  const auto per_thread = static_cast<double>(std::max(1, base.threads));
  MachineCalibration out;
  out.rates = base;
  double linear_flops = 0.0, flops = 0.0;
  for (const model::LayerPlan& layer : model.layers) {
    flops += layer.forward_flops;
    if (layer.kind == "linear") linear_flops += layer.forward_flops;
  }
  if (linear_flops < 0.5 * flops) {
    // The linear layers' products say little of the others' (a Transformer block's attention, a
    // convolution): the GEMM rates stay assumed.
    const double assumed = base.flops_per_s * base.threads;
    out.gemm = {.flops_per_s = assumed,
                .input_gradient_flops_per_s = assumed,
                .weight_flops_per_s = assumed,
                .batched_weight_flops_per_s = assumed,
                .batched_rows = 0,
                .measured = fmt::format("GEMM rates assumed: linear layers carry {:.0f}% of the "
                                        "FLOPs",
                                        100.0 * linear_flops / flops)};
  } else {
    kernels::KernelContext kernels;
    out.gemm = calibrate_gemm_rate(model, micro_batch_rows, num_micro_batches, kernels, length);
    if (out.gemm.out > 0) {
      out.elementwise_bytes_per_s =
          calibrate_elementwise_rate(out.gemm.rows, out.gemm.out, out.gemm.in * out.gemm.out,
                                     timing(length).min_seconds, kernels);
      out.elementwise_measured = fmt::format("relu over {} x {}", out.gemm.rows, out.gemm.out);
      out.rates.bytes_per_s = out.elementwise_bytes_per_s / per_thread;
    }
  }
  const int64_t params = model.num_params() / std::max(1, num_ranks);
  out.memory_bytes_per_s = calibrate_memory_rate(
      optimizer, length == Calibration::kQuick ? std::min(params, kQuickParams) : params);
  omp_set_num_threads(threads);
  out.rates.flops_per_s = out.gemm.flops_per_s / per_thread;
  out.rates.input_gradient_flops_per_s = out.gemm.input_gradient_flops_per_s / per_thread;
  out.rates.weight_flops_per_s = out.gemm.weight_flops_per_s / per_thread;
  out.rates.batched_weight_flops_per_s = out.gemm.batched_weight_flops_per_s / per_thread;
  out.rates.optimizer_bytes_per_s = out.memory_bytes_per_s / per_thread;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace mpipe::train
