// Layer factory: the YAML `type:` name of every layer kind and how its attributes map to the
// layer's constructor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/shape.h"
#include "model/layer_spec.h"
#include "nn/layer.h"

namespace mpipe::model {

// What building a layer needs from the model around it (model_context in model_builder.h).
struct ModelContext {
  // The std of a transformer_block's residual output projections (model.init).
  float residual_std = 0.02f;
};

// Builds one layer for one example's input shape. Attribute errors name the attribute's
// YAML line; shape errors from the layer are prefixed with the layer entry's file and line.
std::unique_ptr<nn::Layer> make_layer(const LayerSpec& spec, const Shape& input, int global_index,
                                      const ModelContext& model = {});

std::vector<std::string> known_layer_kinds();

}  // namespace mpipe::model
