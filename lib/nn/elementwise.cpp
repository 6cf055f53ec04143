// Element-wise tensor arithmetic, over OpenMP threads.
#include "nn/elementwise.h"

#include "core/error.h"

namespace mpipe::nn {

void add_into(Tensor& y, const Tensor& x) {
  check(y.numel() == x.numel(), "add_into: {} and {} differ in size", y.shape(), x.shape());
  float* out = y.data();
  const float* in = x.data();
  const int64_t n = y.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] += in[i];
}

}  // namespace mpipe::nn
