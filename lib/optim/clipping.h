// Gradient clipping by global norm, computed so that it is the same for every partition.
#pragma once

#include <span>
#include <utility>

namespace mpipe::optim {

// sqrt of the sum of per-layer squared-gradient sums, given as (global layer index, sum) pairs
// gathered from every stage. The sums are added in ascending layer index whatever the order
// given, so the norm is bit-identical for any partition. Throws Error on a repeated index.
double global_norm(std::span<const std::pair<int, double>> per_layer_square_sums);

// The factor gradients are scaled by: 1 when max_norm <= 0 (clipping off), else
// min(1, max_norm / (norm + 1e-6)) as in torch.nn.utils.clip_grad_norm_.
double clip_coefficient(double norm, double max_norm);

// grads *= coefficient. grads: [n]
void scale(std::span<float> grads, double coefficient);

}  // namespace mpipe::optim
