// SwiGLU's gate forward and backward, row by row, with Eigen's vectorized exp.
#include "kernels/swiglu.h"

#include <Eigen/Core>

namespace mpipe::kernels {
namespace {

using Row = Eigen::Map<Eigen::ArrayXf>;
using ConstRow = Eigen::Map<const Eigen::ArrayXf>;

}  // namespace

// Each row is one Eigen expression over `hidden` values: which of them Eigen computes in packets
// and which one by one depends only on `hidden` and where the row starts (modulo the vector
// width), the same for a micro-batch's row on every K, schedule and partition.
void swiglu_forward(const float* gate_up, float* out, int64_t rows, int64_t hidden) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const ConstRow gate(gate_up + r * 2 * hidden, hidden);
    const ConstRow up(gate_up + r * 2 * hidden + hidden, hidden);
    Row(out + r * hidden, hidden) = gate / (1.0f + (-gate).exp()) * up;
  }
}

void swiglu_backward(const float* gate_up, const float* dout, float* dgate_up, int64_t rows,
                     int64_t hidden) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const ConstRow gate(gate_up + r * 2 * hidden, hidden);
    const ConstRow up(gate_up + r * 2 * hidden + hidden, hidden);
    const ConstRow d(dout + r * hidden, hidden);
    Row dgate(dgate_up + r * 2 * hidden, hidden);
    Row dup(dgate_up + r * 2 * hidden + hidden, hidden);
    dup = 1.0f / (1.0f + (-gate).exp());  // the gate's sigmoid, until the last line
    dgate = d * up * dup * (1.0f + gate * (1.0f - dup));
    dup = d * gate * dup;
  }
}

}  // namespace mpipe::kernels
