// Multi-head attention core: softmax(q·k^T / sqrt(head_dim) + mask) · v, with a causal mask
// and/or a key-padding mask; grouped-query attention shares each key/value head among a group of
// query heads.
#pragma once

#include <cstdint>

#include "kernels/context.h"

namespace mpipe::kernels {

// Sizes of one attention call; every head of every example attends within its own sequences.
struct AttentionShape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t q_len = 0;     // queries per head (Tq)
  int64_t kv_len = 0;    // keys and values per head (Tk)
  int64_t head_dim = 0;  // d / heads
  // Key/value heads (grouped-query attention): 0 means `heads`; else it divides heads, and query
  // head h attends to key/value head h / (heads / kv_heads).
  int64_t kv_heads = 0;
};

// shape.kv_heads, or shape.heads when it is 0.
inline int64_t kv_heads_of(const AttentionShape& shape) {
  return shape.kv_heads == 0 ? shape.heads : shape.kv_heads;
}

// Which keys a query may attend to.
struct AttentionMask {
  // Query i sees keys j <= i only (needs q_len == kv_len).
  bool causal = false;
  // nullptr, or [batch, kv_len]: 0 marks a padding key, which no query of that example sees.
  const uint8_t* key_keep = nullptr;
};

// q, out: [batch, heads, q_len, head_dim]; k, v: [batch, kv_heads, kv_len, head_dim]; probs:
// [batch, heads, q_len, kv_len] (written: the softmax of the masked, scaled scores; masked
// entries are 0, and so is every entry of a row whose keys are all masked, whose output is 0).
// dropout_mask: nullptr or [batch, heads, q_len, kv_len] multipliers (0 or 1 / (1 - p)) applied
// to probs before the product with v: out = (probs * dropout_mask) · v.
void attention_forward(KernelContext& ctx, const AttentionShape& shape, const AttentionMask& mask,
                       const float* q, const float* k, const float* v, const float* dropout_mask,
                       float* probs, float* out);

// The gradients of out with respect to q, k and v, from dout and the probs and dropout_mask of
// the forward pass (shapes as above; the probabilities carry the mask; dk and dv sum over the
// query heads that share a key/value head). dq, dk, dv are overwritten.
void attention_backward(KernelContext& ctx, const AttentionShape& shape, const float* q,
                        const float* k, const float* v, const float* probs,
                        const float* dropout_mask, const float* dout, float* dq, float* dk,
                        float* dv);

}  // namespace mpipe::kernels
