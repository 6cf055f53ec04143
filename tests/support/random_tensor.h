// Test helper: reproducible tensors of uniform values in [-1, 1) from a counter RNG stream.
#pragma once

#include "core/rng.h"
#include "core/tensor.h"

namespace mpipe::testing {

// Element i is 2 * rng.uniform(i) - 1.
inline Tensor uniform_tensor(Shape shape, const CounterRng& rng) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t[i] = 2.0f * rng.uniform(static_cast<uint64_t>(i)) - 1.0f;
  return t;
}

}  // namespace mpipe::testing
