// Matrix products through oneDNN: batched matmul and the fully connected (linear) kernels.
#pragma once

#include <cstdint>

#include "kernels/context.h"

namespace mpipe::kernels {

// c[i] = alpha * op(a[i]) · op(b[i]) + beta * c[i] for i in [0, batch), row-major, where
// op(a): [m, k] (a stored [k, m] when transpose_a), op(b): [k, n] (b stored [n, k] when
// transpose_b), c: [m, n]. beta is 0 (overwrite) or 1 (accumulate).
struct MatmulShape {
  int64_t batch = 1;
  int64_t m = 0, k = 0, n = 0;
  bool transpose_a = false;
  bool transpose_b = false;
};
void matmul(KernelContext& ctx, const MatmulShape& shape, const float* a, const float* b, float* c,
            float alpha = 1.0f, float beta = 0.0f);

// Fully connected. x: [rows, in], w: [out, in], bias: [out] or nullptr, y: [rows, out].
// w is a parameter: in bf16, its copy is made once per kernels::WeightsFixed scope.
void linear_forward(KernelContext& ctx, const float* x, const float* w, const float* bias, float* y,
                    int64_t rows, int64_t in, int64_t out);
// dx = dy · w. dy: [rows, out], dx: [rows, in].
void linear_backward_data(KernelContext& ctx, const float* dy, const float* w, float* dx,
                          int64_t rows, int64_t in, int64_t out);
// dw += dy^T · x, dbias += sum over rows of dy (dbias may be nullptr); without `accumulate`,
// dw = and dbias = instead (their old values are not read).
void linear_backward_weights(KernelContext& ctx, const float* x, const float* dy, float* dw,
                             float* dbias, int64_t rows, int64_t in, int64_t out,
                             bool accumulate = true);
// Both of a backward: linear_backward_weights, then linear_backward_data unless dx is nullptr.
// In bf16 precision dy is converted once for the two products.
void linear_backward(KernelContext& ctx, const float* x, const float* dy, const float* w, float* dx,
                     float* dw, float* dbias, int64_t rows, int64_t in, int64_t out,
                     bool accumulate = true);

}  // namespace mpipe::kernels
