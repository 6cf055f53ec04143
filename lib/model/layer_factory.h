// Layer factory: the YAML `type:` name of every layer kind and how its attributes map to the
// layer's constructor.
#pragma once

#include <memory>
#include <span>
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

// Builds one layer for one example's input shape and the shapes of the values it reads (its
// `read`, in order; only kinds that read take any). Attribute errors name the attribute's YAML
// line; shape errors from the layer are prefixed with the layer entry's file and line.
std::unique_ptr<nn::Layer> make_layer(const LayerSpec& spec, const Shape& input,
                                      std::span<const Shape> reads, int global_index,
                                      const ModelContext& model = {});
// The same for a layer that reads no values.
std::unique_ptr<nn::Layer> make_layer(const LayerSpec& spec, const Shape& input, int global_index,
                                      const ModelContext& model = {});

std::vector<std::string> known_layer_kinds();
// The kinds among them that read values (a model graph's `read`): built with the reads' shapes.
std::vector<std::string> reading_layer_kinds();

}  // namespace mpipe::model
