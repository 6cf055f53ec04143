// Test helpers: a model of layers (kind, attributes) as an experiment file's model.layers gives
// them (the file exp.yaml, the model on line 5, layer i on line 6 + i), and a small MLP.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/shape.h"
#include "model/layer_spec.h"

namespace mpipe::testing {

inline model::ModelSpec model_of(
    const std::vector<std::pair<std::string, std::map<std::string, model::AttrValue>>>& ls) {
  model::ModelSpec spec;
  spec.where = {"exp.yaml", 5, "model"};
  for (size_t i = 0; i < ls.size(); ++i) {
    const std::string path = "model.layers[" + std::to_string(i) + "]";
    model::LayerSpec layer{
        .kind = ls[i].first, .attrs = {}, .where = {"exp.yaml", 6 + static_cast<int>(i), path}};
    for (const auto& [key, value] : ls[i].second) {
      layer.attrs[key] = {.value = value, .where = {"exp.yaml", 6 + static_cast<int>(i), path}};
    }
    spec.layers.push_back(std::move(layer));
  }
  return spec;
}

// Keeps more than its input: every layer saves something.
inline model::ModelSpec dense_model() {
  return model_of(
      {{"linear", {{"units", int64_t{6}}}}, {"relu", {}}, {"linear", {{"units", int64_t{3}}}}});
}
inline const Shape kDenseInput{5};

}  // namespace mpipe::testing
