// SwiGLU's gate forward and backward, row by row, with Eigen's vectorized exp.
#include "kernels/swiglu.h"

#include <vector>

#include "kernels/aligned_rows.h"

namespace mpipe::kernels {
namespace {

using ConstRow = Eigen::Map<const Eigen::ArrayXf>;

}  // namespace

// Each row is one Eigen expression over `hidden` values into aligned rows (with_aligned_rows): a
// value's bits depend on its inputs and its column alone, the same for a micro-batch's row on
// every K, schedule and partition.
void swiglu_forward(const float* gate_up, float* out, int64_t rows, int64_t hidden) {
#pragma omp parallel
  {
    std::vector<float> scratch;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const ConstRow gate(gate_up + r * 2 * hidden, hidden);
      const ConstRow up(gate_up + r * 2 * hidden + hidden, hidden);
      with_aligned_rows<1>(hidden, {out + r * hidden}, scratch, false,
                           [&](auto& o) { o[0] = gate / (1.0f + (-gate).exp()) * up; });
    }
  }
}

void swiglu_backward(const float* gate_up, const float* dout, float* dgate_up, int64_t rows,
                     int64_t hidden) {
#pragma omp parallel
  {
    std::vector<float> scratch;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const ConstRow gate(gate_up + r * 2 * hidden, hidden);
      const ConstRow up(gate_up + r * 2 * hidden + hidden, hidden);
      const ConstRow d(dout + r * hidden, hidden);
      float* dgate = dgate_up + r * 2 * hidden;
      with_aligned_rows<2>(hidden, {dgate, dgate + hidden}, scratch, false, [&](auto& o) {
        RowMap &dg = o[0], &dup = o[1];
        dup = 1.0f / (1.0f + (-gate).exp());  // the gate's sigmoid, until the last line
        dg = d * up * dup * (1.0f + gate * (1.0f - dup));
        dup = d * gate * dup;
      });
    }
  }
}

}  // namespace mpipe::kernels
