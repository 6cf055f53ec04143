// The peak FLOP/s of this process's GEMM: a short oneDNN matmul at the context's precision and
// this process's OpenMP threads, the denominator of the model FLOPs utilization (MFU).
#pragma once

#include <cstdint>

#include "kernels/context.h"

namespace mpipe::kernels {

struct GemmPeak {
  double flops_per_s = 0.0;  // the fastest repetition's rate
  int64_t size = 0;          // the product's m = k = n
  int threads = 0;           // OpenMP threads it ran on (omp_get_max_threads)
  double seconds = 0.0;      // the measurement's whole time, the warm-up repetition included
};

// Repeats a size x size x size matmul (2·size³ FLOPs each) for at least `min_seconds` (and at
// least three times after a warm-up repetition) and keeps the fastest repetition's rate.
GemmPeak measure_gemm_peak(KernelContext& kernels, int64_t size = 1024, double min_seconds = 0.1);

}  // namespace mpipe::kernels
