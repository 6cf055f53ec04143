// Tensor-by-tensor differences between two weight files.
#include "checkpoint/weight_diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "core/error.h"

namespace mpipe::checkpoint {

std::vector<TensorDiff> diff_weights(const SafetensorsFile& a, const std::string& a_name,
                                     const SafetensorsFile& b, const std::string& b_name) {
  std::map<std::string, const NamedTensor*> others;
  for (const NamedTensor& t : b.tensors) others[t.name] = &t;
  check_input(a.tensors.size() == b.tensors.size(), "{} has {} tensors, {} has {}", a_name,
              a.tensors.size(), b_name, b.tensors.size());
  std::vector<TensorDiff> diffs;
  for (const NamedTensor& t : a.tensors) {
    auto it = others.find(t.name);
    check_input(it != others.end(), "{}: tensor {} is not in {}", a_name, t.name, b_name);
    const NamedTensor& u = *it->second;
    check_input(t.shape == u.shape, "tensor {} has shape {} in {} and {} in {}", t.name, t.shape,
                a_name, u.shape, b_name);
    TensorDiff d{.name = t.name};
    d.identical =
        std::memcmp(t.values.data(), u.values.data(), t.values.size() * sizeof(float)) == 0;
    double diff_squares = 0.0, a_squares = 0.0, b_squares = 0.0;
    for (size_t i = 0; i < t.values.size(); ++i) {
      const double x = t.values[i], y = u.values[i];
      d.max_abs = std::max(d.max_abs, std::abs(x - y));
      diff_squares += (x - y) * (x - y);
      a_squares += x * x;
      b_squares += y * y;
    }
    const double scale = std::sqrt(std::max(a_squares, b_squares));
    if (scale > 0) d.rel = std::sqrt(diff_squares) / scale;
    diffs.push_back(std::move(d));
  }
  return diffs;
}

}  // namespace mpipe::checkpoint
