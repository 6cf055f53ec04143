// SwiGLU's gate forward and backward, row by row.
#include "kernels/swiglu.h"

#include <cmath>

namespace mpipe::kernels {

void swiglu_forward(const float* gate_up, float* out, int64_t rows, int64_t hidden) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* gate = gate_up + r * 2 * hidden;
    const float* up = gate + hidden;
    float* o = out + r * hidden;
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) {
      const float g = gate[j];
      o[j] = g / (1.0f + std::exp(-g)) * up[j];
    }
  }
}

void swiglu_backward(const float* gate_up, const float* dout, float* dgate_up, int64_t rows,
                     int64_t hidden) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* gate = gate_up + r * 2 * hidden;
    const float* up = gate + hidden;
    const float* d = dout + r * hidden;
    float* dgate = dgate_up + r * 2 * hidden;
    float* dup = dgate + hidden;
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) {
      const float g = gate[j];
      const float sigmoid = 1.0f / (1.0f + std::exp(-g));
      dgate[j] = d[j] * up[j] * sigmoid * (1.0f + g * (1.0f - sigmoid));
      dup[j] = d[j] * g * sigmoid;
    }
  }
}

}  // namespace mpipe::kernels
