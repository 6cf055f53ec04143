// The peak FLOP/s of this process's GEMM: a short oneDNN matmul at the context's precision and
// this process's OpenMP threads, the denominator of the model FLOPs utilization (MFU).
#pragma once

#include <cstdint>

#include "kernels/context.h"
#include "kernels/matmul.h"

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

// The same for one product of any shape: its FLOP/s (2·m·k·n per product).
double measure_gemm_rate(KernelContext& kernels, const MatmulShape& shape, double min_seconds);

// What a fully connected layer's products run at with `rows` rows, each timed with the layer's
// own kernel and kept as the median repetition's FLOP/s (2·rows·in·out per product), timed for
// at least `min_seconds` and `cycles` times through the copies. As a stage runs its layers one
// after another, each product finds its weights (and their gradient) where the stage's other
// layers left them, so the products cycle through copies of them, `streamed_bytes` of weights and
// gradients in all (weight_copies: a stage's parameters and their gradients; a 16-row product of
// a 1024 x 1024 weight ran 16-42% slower among 24 such layers than among 8). Each product runs
// once on every copy before it is timed; the first (the forward) also until `warm_up_seconds`
// have passed, for a core that was idle to reach the speed it computes a step at. With
// `deferred_rows` > 0, the weight gradient again at those rows (several micro-batches' stacked:
// one deferred product), on the same copies.
struct LinearRates {
  double forward = 0.0;                   // linear_forward
  double input_gradient = 0.0;            // linear_backward_data
  double weight_gradient = 0.0;           // linear_backward_weights, accumulating into the gradient
  double deferred_weight_gradient = 0.0;  // the same at deferred_rows (0: not timed)
};
inline constexpr double kStreamedBytes = 64.0 * (1 << 20);  // when the stage is not known
LinearRates measure_linear_rates(KernelContext& kernels, int64_t rows, int64_t in, int64_t out,
                                 double min_seconds = 0.1, int cycles = 3,
                                 double warm_up_seconds = 0.0,
                                 double streamed_bytes = kStreamedBytes, int64_t deferred_rows = 0);

// The copies of an in x out weight and its gradient that `streamed_bytes` hold: at least 2 (a
// stage's other layers come between two products of one), at most 64 and 512 MiB of them (beyond
// every cache: 24 and 48 layers of 1024 x 1024 ran alike).
int64_t weight_copies(double streamed_bytes, int64_t in, int64_t out);

}  // namespace mpipe::kernels
