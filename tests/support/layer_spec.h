// Test helper: a layer as an experiment file's model.layers[0] would give it (kind, attributes,
// and where each came from, for the messages that name them).
#pragma once

#include <map>
#include <string>
#include <vector>

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

// The same for a layer that reads the values `reads` (its `read:`), listed on lines 5, 6, ...
inline model::LayerSpec reading_layer_spec(const std::string& kind,
                                           const std::map<std::string, model::AttrValue>& attrs,
                                           const std::vector<std::string>& reads) {
  model::LayerSpec spec = layer_spec(kind, attrs);
  for (size_t i = 0; i < reads.size(); ++i) {
    spec.reads.push_back(model::ValueRef{
        reads[i],
        {"exp.yaml", 5 + static_cast<int>(i), "model.layers[0].read[" + std::to_string(i) + "]"}});
  }
  return spec;
}

}  // namespace mpipe::testing
