// Naive double-precision reference kernels for the Transformer's norms, attention, rotary
// position embeddings and SwiGLU: the test oracle.
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

// Same contracts as kernels::rms_norm_forward / rms_norm_backward.
// x, y: [rows, dim]; gamma: [dim]; rstd: [rows].
void rms_norm_forward(const float* x, const float* gamma, float* y, float* rstd, int64_t rows,
                      int64_t dim, float eps);
// dx overwritten; dgamma: [dim] accumulated. Recomputes the RMS in double from x.
void rms_norm_backward(const float* x, const float* dy, const float* gamma, float* dx,
                       float* dgamma, int64_t rows, int64_t dim, float eps);

// kernels::rotary_apply's rotation of x: [slices, seq, head_dim] into out, each angle
// t · base^(-2i/head_dim) computed where it is used, in double; `inverse` by the opposite angle.
void rotary_apply(const float* x, float* out, int64_t slices, int64_t seq, int64_t head_dim,
                  double base, bool inverse);

// Same contracts as kernels::swiglu_forward / swiglu_backward.
void swiglu_forward(const float* gate_up, float* out, int64_t rows, int64_t hidden);
void swiglu_backward(const float* gate_up, const float* dout, float* dgate_up, int64_t rows,
                     int64_t hidden);

// Same contract as kernels::attention_forward.
// q, out: [batch, heads, q_len, head_dim]; k, v: [batch, kv_heads, kv_len, head_dim]; probs,
// dropout_mask: [batch, heads, q_len, kv_len] (dropout_mask may be nullptr).
void attention_forward(const AttentionShape& shape, const AttentionMask& mask, const float* q,
                       const float* k, const float* v, const float* dropout_mask, float* probs,
                       float* out);
// As kernels::attention_backward, but recomputes the probabilities in double from q, k and the
// mask instead of taking them from the forward pass.
void attention_backward(const AttentionShape& shape, const AttentionMask& mask, const float* q,
                        const float* k, const float* v, const float* dropout_mask,
                        const float* dout, float* dq, float* dk, float* dv);

}  // namespace mpipe::kernels::reference
