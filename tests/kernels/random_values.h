// Test helper: reproducible uniform random tensors for the kernel tests.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace mpipe::kernels::testing {

// n values uniform in [low, high), a pure function of (stream, n).
inline std::vector<float> random_values(int64_t n, uint64_t stream, float low = -1.0f,
                                        float high = 1.0f) {
  const CounterRng rng(1234, RngPurpose::kData, 77, stream);
  std::vector<float> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) out[i] = low + (high - low) * rng.uniform(i);
  return out;
}

}  // namespace mpipe::kernels::testing
