// Parameter initialization from the counter RNG: values depend only on (seed, global layer,
// parameter index), never on the partition or on which other layers share the buffer.
#pragma once

#include <cstdint>
#include <span>

#include "nn/layer.h"

namespace mpipe::nn {

// Fills `values` (spec.shape.numel() floats) as spec.init says, drawing from
// CounterRng(seed, RngPurpose::kInit, global_layer, param_index). Non-trainable buffers use
// param_index = -1 - buffer_index so their streams never collide with parameters.
// Throws Error on a size mismatch or a uniform init without a positive fan.
void initialize_param(std::span<float> values, const ParamSpec& spec, uint64_t seed,
                      int global_layer, int param_index);

}  // namespace mpipe::nn
