// Attention heads: row blocks copied to and from one sequence per head.
#include "nn/attention_heads.h"

#include <algorithm>

namespace mpipe::nn {

void to_heads(const HeadLayout& s, const float* rows, int64_t stride, int64_t offset,
              float* heads) {
  const int64_t hd = s.head_dim();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t t = 0; t < s.seq; ++t) {
        const float* src = rows + (b * s.seq + t) * stride + offset + h * hd;
        std::copy(src, src + hd, heads + ((b * s.heads + h) * s.seq + t) * hd);
      }
    }
  }
}

void from_heads(const HeadLayout& s, const float* heads, int64_t stride, int64_t offset,
                float* rows) {
  const int64_t hd = s.head_dim();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t t = 0; t < s.seq; ++t) {
        const float* src = heads + ((b * s.heads + h) * s.seq + t) * hd;
        std::copy(src, src + hd, rows + (b * s.seq + t) * stride + offset + h * hd);
      }
    }
  }
}

}  // namespace mpipe::nn
