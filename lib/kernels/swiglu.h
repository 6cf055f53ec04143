// SwiGLU's gate: out = silu(gate) · up, silu(g) = g · sigmoid(g), element-wise over the two
// halves of one matrix product's output, with Eigen's vectorized exp.
#pragma once

#include <cstdint>

namespace mpipe::kernels {

// gate_up: [rows, 2·hidden], each row the gate's `hidden` values then the up projection's;
// out: [rows, hidden].
void swiglu_forward(const float* gate_up, float* out, int64_t rows, int64_t hidden);

// dout: [rows, hidden] → dgate_up: [rows, 2·hidden] (overwritten), gate_up as in forward:
//   dgate = dout · up · sigmoid(g) · (1 + g · (1 − sigmoid(g))),  dup = dout · silu(g).
void swiglu_backward(const float* gate_up, const float* dout, float* dgate_up, int64_t rows,
                     int64_t hidden);

}  // namespace mpipe::kernels
