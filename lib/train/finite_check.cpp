// Finite checks over parameter-layout spans.
#include "train/finite_check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>

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

std::vector<int> layers_with_nonfinite(const nn::ParamBuffer& params, std::span<const float> values,
                                       std::optional<optim::ParamRange> within) {
  const optim::ParamRange range = within.value_or(optim::ParamRange{0, std::ssize(values)});
  std::vector<int> layers;
  for (const nn::ParamBuffer::Entry& entry : params.entries()) {
    if (!entry.trainable) continue;
    const int64_t begin = std::max(entry.offset, range.begin);
    const int64_t end = std::min(entry.offset + entry.shape.numel(), range.end);
    if (begin >= end) continue;
    const auto tensor =
        values.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    if (!all_finite(tensor) && (layers.empty() || layers.back() != entry.global_layer)) {
      layers.push_back(entry.global_layer);
    }
  }
  return layers;
}

}  // namespace mpipe::train
