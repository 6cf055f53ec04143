// The helpers layers use to state their needs.
#include "nn/layer_needs.h"

#include <algorithm>
#include <numeric>

namespace mpipe::nn {

void LayerNeeds::keep_all_of(const LayerNeeds& part) {
  kept_tensor_bytes.insert(kept_tensor_bytes.end(), part.kept_tensor_bytes.begin(),
                           part.kept_tensor_bytes.end());
  kept_fixed_tensor_bytes.insert(kept_fixed_tensor_bytes.end(),
                                 part.kept_fixed_tensor_bytes.begin(),
                                 part.kept_fixed_tensor_bytes.end());
  kept_packed_bytes += part.kept_packed_bytes;
}

void LayerNeeds::keep_weight_work_of(const LayerNeeds& part) {
  weight_work_tensor_bytes.insert(weight_work_tensor_bytes.end(),
                                  part.weight_work_tensor_bytes.begin(),
                                  part.weight_work_tensor_bytes.end());
  weight_work_fixed_tensor_bytes.insert(weight_work_fixed_tensor_bytes.end(),
                                        part.weight_work_fixed_tensor_bytes.begin(),
                                        part.weight_work_fixed_tensor_bytes.end());
  weight_grad_flops += part.weight_grad_flops;
}

double LayerNeeds::kept_bytes_per_example() const {
  return std::accumulate(kept_tensor_bytes.begin(), kept_tensor_bytes.end(), 0.0);
}

double float_bytes(int64_t numel) { return static_cast<double>(numel) * sizeof(float); }

double smaller_activation_bytes(const Shape& input, const Shape& output) {
  return float_bytes(std::min(input.numel(), output.numel()));
}

double matrix_product_backward_flops(double forward_flops, int global_index) {
  return global_index == 0 ? forward_flops : 2.0 * forward_flops;
}

}  // namespace mpipe::nn
