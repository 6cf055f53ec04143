// Rotary position embeddings: the angle table and the in-place rotation of each head's pairs.
#include "kernels/rotary.h"

#include <cmath>

#include "core/error.h"

namespace mpipe::kernels {

RotaryTable rotary_table(int64_t seq, int64_t head_dim, double base) {
  check(seq > 0 && head_dim > 0 && head_dim % 2 == 0 && base > 0.0,
        "rotary_table: seq {}, head_dim {} (even) and base {} must be positive", seq, head_dim,
        base);
  RotaryTable table{.seq = seq, .half = head_dim / 2, .cos = {}, .sin = {}};
  table.cos.resize(static_cast<size_t>(seq * table.half));
  table.sin.resize(table.cos.size());
  for (int64_t t = 0; t < seq; ++t) {
    for (int64_t i = 0; i < table.half; ++i) {
      const double frequency =
          std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
      const double angle = static_cast<double>(t) * frequency;
      table.cos[static_cast<size_t>(t * table.half + i)] = static_cast<float>(std::cos(angle));
      table.sin[static_cast<size_t>(t * table.half + i)] = static_cast<float>(std::sin(angle));
    }
  }
  return table;
}

void rotary_apply(const RotaryTable& table, float* x, int64_t slices, bool inverse) {
  const int64_t seq = table.seq, half = table.half, head_dim = 2 * half;
  const float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < slices; ++s) {
    for (int64_t t = 0; t < seq; ++t) {
      float* first = x + (s * seq + t) * head_dim;
      float* second = first + half;
      const float* c = table.cos.data() + t * half;
      const float* sn = table.sin.data() + t * half;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float a = first[i], b = second[i], sin = sign * sn[i];
        first[i] = a * c[i] - b * sin;
        second[i] = b * c[i] + a * sin;
      }
    }
  }
}

}  // namespace mpipe::kernels
