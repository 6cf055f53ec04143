// Gradient clipping: global norm in layer order, clip coefficient, scaling.
#include "optim/clipping.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace mpipe::optim {

double global_norm(std::span<const std::pair<int, double>> per_layer_square_sums) {
  std::vector<std::pair<int, double>> sums(per_layer_square_sums.begin(),
                                           per_layer_square_sums.end());
  std::sort(sums.begin(), sums.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  double total = 0.0;
  for (size_t i = 0; i < sums.size(); ++i) {
    check(i == 0 || sums[i].first != sums[i - 1].first,
          "global_norm: layer {} has more than one square sum", sums[i].first);
    total += sums[i].second;
  }
  return std::sqrt(total);
}

double clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  return std::min(1.0, max_norm / (norm + 1e-6));
}

void scale(std::span<float> grads, double coefficient) {
  if (coefficient == 1.0) return;
  const float c = static_cast<float>(coefficient);
  for (float& g : grads) g *= c;
}

}  // namespace mpipe::optim
