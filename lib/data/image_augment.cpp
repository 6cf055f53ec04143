// Counter-keyed crop/flip draws and their application to one byte image.
#include "data/image_augment.h"

#include "core/error.h"
#include "core/rng.h"

namespace mpipe::data {

AugmentDraw draw_augment(uint64_t seed, int64_t index, int64_t step, int64_t padding,
                         bool allow_flip) {
  check(index >= 0 && step >= 0 && padding >= 0, "draw_augment: bad index {}, step {}, padding {}",
        index, step, padding);
  const CounterRng rng(seed, RngPurpose::kAugment, static_cast<uint32_t>(index),
                       static_cast<uint64_t>(step));
  const auto span = static_cast<uint64_t>(2 * padding + 1);
  AugmentDraw draw;
  draw.shift_y = static_cast<int64_t>(rng.bits(0) % span) - padding;
  draw.shift_x = static_cast<int64_t>(rng.bits(1) % span) - padding;
  draw.flip = allow_flip && rng.uniform(2) < 0.5f;
  return draw;
}

void apply_augment(std::span<const uint8_t> image, int64_t rows, int64_t cols,
                   const AugmentDraw& draw, std::span<uint8_t> out) {
  check(static_cast<int64_t>(image.size()) == rows * cols &&
            static_cast<int64_t>(out.size()) == rows * cols,
        "apply_augment: image of {} and output of {} bytes for {}x{}", image.size(), out.size(),
        rows, cols);
  for (int64_t y = 0; y < rows; ++y) {
    const int64_t source_y = y + draw.shift_y;
    for (int64_t x = 0; x < cols; ++x) {
      const int64_t source_x = (draw.flip ? cols - 1 - x : x) + draw.shift_x;
      const bool inside = source_y >= 0 && source_y < rows && source_x >= 0 && source_x < cols;
      out[static_cast<size_t>(y * cols + x)] =
          inside ? image[static_cast<size_t>(source_y * cols + source_x)] : uint8_t{0};
    }
  }
}

}  // namespace mpipe::data
