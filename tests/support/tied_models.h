// Test helpers: layers as model.layers[i] of an experiment file gives them, and an encoder-decoder
// whose source embedding, target embedding and head are the three uses of one tied matrix.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/layer_spec.h"

namespace mpipe::testing {

// model.layers[index] of kind `kind` with `attrs`, each named on the experiment's line 10 + index.
inline model::LayerSpec indexed_layer(int index, std::string kind,
                                      std::vector<std::pair<std::string, model::AttrValue>> attrs) {
  const std::string path = fmt::format("model.layers[{}]", index);
  model::LayerSpec spec{
      .kind = std::move(kind), .attrs = {}, .where = {"exp.yaml", 10 + index, path}};
  for (auto& [key, value] : attrs) {
    spec.attrs[key] = {.value = std::move(value),
                       .where = {"exp.yaml", 10 + index, path + "." + key}};
  }
  return spec;
}

// Layers 0 (the source embedding, reading input "source", saved as x), 1 (the target embedding,
// reading "target_in", tied), 2 (x + the target's) and 3 (the head, tied).
inline model::ModelSpec three_uses_model(int64_t vocab, int64_t dim) {
  model::ModelSpec spec;
  spec.layers = {indexed_layer(0, "embedding", {{"vocab", vocab}, {"dim", dim}}),
                 indexed_layer(1, "embedding",
                               {{"vocab", vocab}, {"dim", dim}, {"tie", std::string("embedding")}}),
                 indexed_layer(2, "add", {}),
                 indexed_layer(3, "linear", {{"units", vocab}, {"tie", std::string("embedding")}})};
  spec.layers[0].input = model::ValueRef{.name = "source", .where = spec.layers[0].where};
  spec.layers[0].save = model::ValueRef{.name = "x", .where = spec.layers[0].where};
  spec.layers[1].input = model::ValueRef{.name = "target_in", .where = spec.layers[1].where};
  spec.layers[2].reads = {model::ValueRef{.name = "x", .where = spec.layers[2].where}};
  spec.where = {"exp.yaml", 2, "model"};
  return spec;
}

}  // namespace mpipe::testing
