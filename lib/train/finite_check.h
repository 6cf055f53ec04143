// Finite checks: is every value of a gradient or weight span finite, and which layers are not.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "nn/param_buffer.h"
#include "optim/optimizer.h"

namespace mpipe::train {

// True when no value is NaN or infinite. One branch-free pass (vectorized, OpenMP).
bool all_finite(std::span<const float> values);

// The global indices (ascending) of the layers whose trainable entries in `values` (laid out
// like params.values() / params.grads()), within `within` (a replica's shard) when given, hold a
// NaN or an infinity.
std::vector<int> layers_with_nonfinite(const nn::ParamBuffer& params, std::span<const float> values,
                                       std::optional<optim::ParamRange> within = std::nullopt);

}  // namespace mpipe::train
