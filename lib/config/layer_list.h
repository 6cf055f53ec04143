// Layer list: the `model.layers` list with its `repeat:` blocks expanded in place.
#pragma once

#include <vector>

#include "config/field.h"
#include "model/layer_spec.h"

namespace mpipe::config {

// Most layers a model may expand to (guards against runaway `repeat:` counts).
inline constexpr size_t kMaxLayers = 100000;

// Each entry is `{type: <kind>, <attr>: <value>, ...}` or `{repeat: N, layers: [...]}` (N >= 1,
// nested blocks allowed). Every path names the index in the expanded list: the entry that
// lands at position i is `model.layers[i]` (a repeat block: the position of its first layer),
// its attributes `model.layers[i].<attr>`; lines are those of the written entries.
std::vector<model::LayerSpec> expand_layers(const Field& layers);

}  // namespace mpipe::config
