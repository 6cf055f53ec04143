// The GEMM peak: timed repetitions of one cached oneDNN matmul.
#include "kernels/gemm_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/matmul.h"

namespace mpipe::kernels {

GemmPeak measure_gemm_peak(KernelContext& kernels, int64_t size, double min_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto elements = static_cast<size_t>(size * size);
  // Operands of ordinary magnitude (no denormals, which some CPUs compute slowly).
  const std::vector<float> a(elements, 0.5f), b(elements, 0.25f);
  std::vector<float> c(elements);
  const MatmulShape shape{.batch = 1, .m = size, .k = size, .n = size};
  const double flops =
      2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  const Clock::time_point start = Clock::now();
  matmul(kernels, shape, a.data(), b.data(), c.data());  // warm-up: the primitive, the pages
  double fastest_s = 0.0;
  for (int repetition = 0;
       repetition < 3 || std::chrono::duration<double>(Clock::now() - start).count() < min_seconds;
       ++repetition) {
    const Clock::time_point begin = Clock::now();
    matmul(kernels, shape, a.data(), b.data(), c.data());
    const double s = std::chrono::duration<double>(Clock::now() - begin).count();
    fastest_s = repetition == 0 ? s : std::min(fastest_s, s);
  }
  return {.flops_per_s = flops / fastest_s,
          .size = size,
          .threads = omp_get_max_threads(),
          .seconds = std::chrono::duration<double>(Clock::now() - start).count()};
}

}  // namespace mpipe::kernels
