// Training-time image augmentation: random crop after zero padding and horizontal flip.
#pragma once

#include <cstdint>
#include <span>

namespace mpipe::data {

// One example's augmentation: shift the image by (shift_y, shift_x) pixels with zero fill (a
// crop of the zero-padded image), then mirror it left-right if `flip`.
struct AugmentDraw {
  int64_t shift_y = 0;
  int64_t shift_x = 0;
  bool flip = false;
};

// The augmentation of example `index` at training step `step`: shifts uniform in
// [-padding, padding], flip with probability 1/2 when `allow_flip`. Drawn from
// CounterRng(seed, RngPurpose::kAugment, index, step), so any rank reproduces it.
AugmentDraw draw_augment(uint64_t seed, int64_t index, int64_t step, int64_t padding,
                         bool allow_flip);

// image, out: [rows, cols] bytes; out[y][x] = image[y + shift_y][x' + shift_x] (0 outside the
// image), x' = cols - 1 - x when flipped, else x.
void apply_augment(std::span<const uint8_t> image, int64_t rows, int64_t cols,
                   const AugmentDraw& draw, std::span<uint8_t> out);

}  // namespace mpipe::data
