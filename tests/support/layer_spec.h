// Test helper: a layer as an experiment file's model.layers[0] would give it (kind, attributes,
// and where each came from, for the messages that name them).
#pragma once

#include <map>
#include <string>

#include "model/layer_spec.h"

namespace mpipe::testing {

inline model::LayerSpec layer_spec(const std::string& kind,
                                   const std::map<std::string, model::AttrValue>& attrs) {
  model::LayerSpec spec{.kind = kind, .attrs = {}, .where = {"exp.yaml", 3, "model.layers[0]"}};
  for (const auto& [key, value] : attrs) {
    spec.attrs[key] =
        model::Attr{.value = value, .where = {"exp.yaml", 4, "model.layers[0]." + key}};
  }
  return spec;
}

}  // namespace mpipe::testing
