// Finite checks over parameter-layout spans.
#include "train/finite_check.h"

#include <cmath>
#include <cstdint>

namespace mpipe::train {

bool all_finite(std::span<const float> values) {
  // x * 0 is 0 for every finite x and NaN for NaN and +-inf; the sum is 0 exactly when all
  // values are finite. No branch in the loop, so it vectorizes.
  const float* data = values.data();
  const auto n = static_cast<int64_t>(values.size());
  float poison = 0.0f;
#pragma omp parallel for simd reduction(+ : poison) schedule(static)
  for (int64_t i = 0; i < n; ++i) poison += data[i] * 0.0f;
  return poison == 0.0f;
}

std::vector<int> layers_with_nonfinite(const nn::ParamBuffer& params,
                                       std::span<const float> values) {
  std::vector<int> layers;
  for (const nn::ParamBuffer::Entry& entry : params.entries()) {
    if (!entry.trainable) continue;
    const auto tensor =
        values.subspan(static_cast<size_t>(entry.offset), static_cast<size_t>(entry.shape.numel()));
    if (!all_finite(tensor) && (layers.empty() || layers.back() != entry.global_layer)) {
      layers.push_back(entry.global_layer);
    }
  }
  return layers;
}

}  // namespace mpipe::train
