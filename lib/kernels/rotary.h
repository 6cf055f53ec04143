// Rotary position embeddings (RoPE) in the GPT-NeoX / LLaMA "rotate half" pairing: in a head of
// width h, dimension i < h/2 pairs with dimension i + h/2, and the pair is rotated by the angle
// t · base^(-2i/h) at position t.
#pragma once

#include <cstdint>
#include <vector>

namespace mpipe::kernels {

// cos and sin of every (position, pair) angle: [seq, head_dim / 2] each, computed in double.
struct RotaryTable {
  int64_t seq = 0;
  int64_t half = 0;  // head_dim / 2
  std::vector<float> cos, sin;
};

// head_dim even and > 0, seq > 0, base > 0.
RotaryTable rotary_table(int64_t seq, int64_t head_dim, double base);

// x: [slices, seq, head_dim] (slices = batch · heads), rotated in place:
//   x[i]' = x[i] cos − x[i + h/2] sin,  x[i + h/2]' = x[i + h/2] cos + x[i] sin.
// `inverse` rotates by the opposite angle, the transpose: it takes the gradient of the rotated
// values back to the gradient of the values before the rotation.
void rotary_apply(const RotaryTable& table, float* x, int64_t slices, bool inverse);

}  // namespace mpipe::kernels
