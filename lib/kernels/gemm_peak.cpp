// The GEMM peak: timed repetitions of one cached oneDNN matmul.
#include "kernels/gemm_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <new>

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

double measure_linear_rate(KernelContext& kernels, int64_t rows, int64_t in, int64_t out,
                           double min_seconds) {
  const double flops =
      2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out);
  const double forward =
      flops / measure_gemm_rate(kernels, {.m = rows, .k = in, .n = out}, min_seconds);
  const double input_gradient =
      flops / measure_gemm_rate(kernels, {.m = rows, .k = out, .n = in}, min_seconds);
  const double weight_gradient =
      flops / measure_gemm_rate(kernels, {.m = in, .k = rows, .n = out}, min_seconds);
  return 3.0 * flops / (forward + input_gradient + weight_gradient);
}

}  // namespace mpipe::kernels
