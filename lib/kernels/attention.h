// Causal multi-head self-attention core: softmax(q·k^T / sqrt(head_dim) + causal mask) · v.
#pragma once

#include <cstdint>

#include "kernels/context.h"

namespace mpipe::kernels {

// Sizes of one attention call; every head attends within its own sequence.
struct AttentionShape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t seq = 0;       // T
  int64_t head_dim = 0;  // d / heads
};

// q, k, v, out: [batch, heads, seq, head_dim]; probs: [batch, heads, seq, seq] (written: the
// softmax of the masked, scaled scores; entries j > i are 0). dropout_mask: nullptr or
// [batch, heads, seq, seq] multipliers (0 or 1 / (1 - p)) applied to probs before the product
// with v: out = (probs * dropout_mask) · v.
void causal_attention_forward(KernelContext& ctx, const AttentionShape& shape, const float* q,
                              const float* k, const float* v, const float* dropout_mask,
                              float* probs, float* out);

// The gradients of out with respect to q, k and v, from dout and the probs and dropout_mask of
// the forward pass (shapes as above). dq, dk, dv are overwritten.
void causal_attention_backward(KernelContext& ctx, const AttentionShape& shape, const float* q,
                               const float* k, const float* v, const float* probs,
                               const float* dropout_mask, const float* dout, float* dq, float* dk,
                               float* dv);

}  // namespace mpipe::kernels
