// Helpers for composite layers (residual block, separable cell, Transformer block) that own
// sub-layers and expose their parameters (and buffer updates) under prefixed names.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "nn/layer.h"

namespace mpipe::nn {

// Appends `specs` to `out` with `prefix` before each name ("attn." + "qkv.weight").
void append_prefixed(std::vector<ParamSpec>& out, std::vector<ParamSpec> specs,
                     const std::string& prefix);

// Appends a sub-layer forward's buffer update to the composite's (sub-layers in spec order).
void append_buffer_update(Forward& composite, const Forward& sub_layer);

// Views [begin, begin + count) of a list of views (one sub-layer's share of bind()).
std::vector<std::span<float>> views(const std::vector<std::span<float>>& all, size_t begin,
                                    size_t count);

}  // namespace mpipe::nn
