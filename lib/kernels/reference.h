// Naive reference kernels in double precision: the test oracle for every oneDNN kernel.
#pragma once

#include <cstdint>

#include "kernels/eltwise.h"
#include "kernels/matmul.h"
#include "kernels/softmax_cross_entropy.h"

namespace mpipe::kernels::reference {

// Same contract as kernels::matmul, computed with plain loops in double.
void matmul(const MatmulShape& shape, const float* a, const float* b, float* c, float alpha = 1.0f,
            float beta = 0.0f);

// Same contracts as the kernels::linear_* functions.
// x: [rows, in], w: [out, in], bias: [out] or nullptr, y: [rows, out].
void linear_forward(const float* x, const float* w, const float* bias, float* y, int64_t rows,
                    int64_t in, int64_t out);
// dy: [rows, out], w: [out, in] → dx: [rows, in].
void linear_backward_data(const float* dy, const float* w, float* dx, int64_t rows, int64_t in,
                          int64_t out);
// dw: [out, in] += dy^T · x; dbias: [out] += column sums of dy (dbias may be nullptr).
void linear_backward_weights(const float* x, const float* dy, float* dw, float* dbias, int64_t rows,
                             int64_t in, int64_t out);

// y[i] = f(x[i]) and dx[i] = f'(x[i]) * dy[i]; x, y, dy, dx: [n].
void eltwise_forward(EltwiseKind kind, const float* x, float* y, int64_t n);
void eltwise_backward(EltwiseKind kind, const float* x, const float* dy, float* dx, int64_t n);

// Same contract as kernels::softmax_cross_entropy.
SoftmaxCrossEntropyResult softmax_cross_entropy(const float* logits, const float* targets,
                                                int64_t rows, int64_t classes, float grad_scale,
                                                float* grad,
                                                const CrossEntropyOptions& options = {});

}  // namespace mpipe::kernels::reference
