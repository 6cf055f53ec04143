// Naive double-precision reference kernels for layer norm and attention: the test oracle.
#pragma once

#include <cstdint>

#include "kernels/attention.h"

namespace mpipe::kernels::reference {

// Same contracts as kernels::layer_norm_forward / layer_norm_backward.
// x, y: [rows, dim]; gamma, beta: [dim]; mean, variance: [rows].
void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* variance, int64_t rows, int64_t dim, float eps);
// dx overwritten; dgamma, dbeta: [dim] accumulated.
void layer_norm_backward(const float* x, const float* dy, const float* gamma, const float* mean,
                         const float* variance, float* dx, float* dgamma, float* dbeta,
                         int64_t rows, int64_t dim, float eps);

// Same contract as kernels::causal_attention_forward.
// q, k, v, out: [batch, heads, seq, head_dim]; probs, dropout_mask: [batch, heads, seq, seq]
// (dropout_mask may be nullptr).
void causal_attention_forward(const AttentionShape& shape, const float* q, const float* k,
                              const float* v, const float* dropout_mask, float* probs, float* out);
// As kernels::causal_attention_backward, but recomputes the probabilities in double from q and k
// instead of taking them from the forward pass.
void causal_attention_backward(const AttentionShape& shape, const float* q, const float* k,
                               const float* v, const float* dropout_mask, const float* dout,
                               float* dq, float* dk, float* dv);

}  // namespace mpipe::kernels::reference
