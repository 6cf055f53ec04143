// Attention heads: the columns of a projection's rows [batch * seq, stride] moved to one
// sequence per head [batch, heads, seq, head_dim], and back.
#pragma once

#include <cstdint>

namespace mpipe::nn {

// Sizes of one move: batch, sequence, model width, heads.
struct HeadLayout {
  int64_t batch, seq, dim, heads;
  int64_t head_dim() const { return dim / heads; }
  int64_t rows() const { return batch * seq; }
};

// heads[b, h, t, e] = rows[b * seq + t, offset + h * head_dim + e].
// rows: [batch * seq, stride] → heads: [batch, heads, seq, head_dim].
void to_heads(const HeadLayout& s, const float* rows, int64_t stride, int64_t offset, float* heads);

// The inverse of to_heads: heads: [batch, heads, seq, head_dim] → columns [offset, offset + dim)
// of rows: [batch * seq, stride].
void from_heads(const HeadLayout& s, const float* heads, int64_t stride, int64_t offset,
                float* rows);

}  // namespace mpipe::nn
