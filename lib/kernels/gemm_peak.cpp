// The GEMM peak: timed repetitions of one cached oneDNN matmul.
#include "kernels/gemm_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <vector>

namespace mpipe::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A 64-byte aligned float buffer filled with one value.
class AlignedFloats {
 public:
  AlignedFloats(int64_t count, float value)
      : data(static_cast<float*>(
            ::operator new(static_cast<size_t>(count) * sizeof(float), kAlignment))) {
    std::fill_n(data, count, value);
  }
  ~AlignedFloats() { ::operator delete(data, kAlignment); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;

  float* const data;

 private:
  static constexpr std::align_val_t kAlignment{64};
};

}  // namespace

double measure_gemm_rate(KernelContext& kernels, const MatmulShape& shape, double min_seconds) {
  // 64-byte aligned like every tensor of a run (the rate depends on it: heap vectors ran at half
  // the rate in some processes), but not Tensors, which the run's memory account would count;
  // operands of ordinary magnitude (no denormals, which some CPUs compute slowly).
  AlignedFloats a(shape.m * shape.k, 0.5f), b(shape.k * shape.n, 0.25f), c(shape.m * shape.n, 0.0f);
  const double flops = 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.k) *
                       static_cast<double>(shape.n);
  const Clock::time_point start = Clock::now();
  matmul(kernels, shape, a.data, b.data, c.data);  // warm-up: the primitive, the pages
  double fastest_s = 0.0;
  for (int repetition = 0; repetition < 3 || seconds_since(start) < min_seconds; ++repetition) {
    const Clock::time_point begin = Clock::now();
    matmul(kernels, shape, a.data, b.data, c.data);
    const double s = seconds_since(begin);
    fastest_s = repetition == 0 ? s : std::min(fastest_s, s);
  }
  return flops / fastest_s;
}

GemmPeak measure_gemm_peak(KernelContext& kernels, int64_t size, double min_seconds) {
  const Clock::time_point start = Clock::now();
  const double rate =
      measure_gemm_rate(kernels, {.batch = 1, .m = size, .k = size, .n = size}, min_seconds);
  return {.flops_per_s = rate,
          .size = size,
          .threads = omp_get_max_threads(),
          .seconds = seconds_since(start)};
}

LinearRates measure_linear_rates(KernelContext& kernels, int64_t rows, int64_t in, int64_t out,
                                 double min_seconds, int cycles) {
  constexpr double kStreamedBytes = 64.0 * (1 << 20);
  const int64_t weight_floats = in * out;
  const auto copies = static_cast<size_t>(std::clamp(
      kStreamedBytes / (2.0 * sizeof(float) * static_cast<double>(weight_floats)), 2.0, 64.0));
  std::vector<std::unique_ptr<AlignedFloats>> weights, grads;
  for (size_t c = 0; c < copies; ++c) {
    weights.push_back(std::make_unique<AlignedFloats>(weight_floats, 0.25f));
    grads.push_back(std::make_unique<AlignedFloats>(weight_floats, 0.0f));
  }
  AlignedFloats x(rows * in, 0.5f), y(rows * out, 0.0f), dy(rows * out, 0.01f), dx(rows * in, 0.0f);
  const double flops =
      2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out);
  // The median repetition's rate of `product` (run on copy r % copies), after one of each copy.
  const auto median_rate = [&](const auto& product) {
    for (size_t c = 0; c < copies; ++c) product(c);
    std::vector<double> times;
    const Clock::time_point start = Clock::now();
    for (size_t r = 0;
         r < static_cast<size_t>(cycles) * copies || seconds_since(start) < min_seconds; ++r) {
      const Clock::time_point begin = Clock::now();
      product(r % copies);
      times.push_back(seconds_since(begin));
    }
    const auto middle = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
    std::ranges::nth_element(times, middle);
    return flops / *middle;
  };
  return {.forward = median_rate([&](size_t c) {
            linear_forward(kernels, x.data, weights[c]->data, nullptr, y.data, rows, in, out);
          }),
          .input_gradient = median_rate([&](size_t c) {
            linear_backward_data(kernels, dy.data, weights[c]->data, dx.data, rows, in, out);
          }),
          .weight_gradient = median_rate([&](size_t c) {
            linear_backward_weights(kernels, x.data, dy.data, grads[c]->data, nullptr, rows, in,
                                    out);
          })};
}

}  // namespace mpipe::kernels
