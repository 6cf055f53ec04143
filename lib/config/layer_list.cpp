// Layer list: reading layer entries and expanding repeat blocks.
#include "config/layer_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "config/bounded.h"
#include "config/layer_attr.h"
#include "config/map_reader.h"

namespace mpipe::config {
namespace {

// A value's name (`save`, `input` or an element of `read`): letters, digits and '_', starting with
// a letter, so that it reads the same in a plan, a trace and an error.
model::ValueRef value_ref(const Field& field) {
  const std::string name = field.node().IsScalar() ? field.node().Scalar() : "";
  const bool valid = !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                     });
  if (!valid) {
    field.fail(fmt::format("expected a value name (a letter, then letters, digits or '_'), got {}",
                           field.describe()));
  }
  return {.name = name, .where = field.source().ref(field.path(), field.mark())};
}

model::LayerSpec read_layer(const Field& entry) {
  const MapReader map(entry);
  model::LayerSpec layer;
  const Field type = map.required("type");
  layer.kind = type.as_string();
  if (layer.kind.empty()) type.fail("must not be empty");
  for (const auto& [name, value] : map.entries()) {
    if (name == "type") continue;
    if (name == "save") {
      layer.save = value_ref(value);
      continue;
    }
    if (name == "input") {
      layer.input = value_ref(value);
      continue;
    }
    if (name == "read") {
      for (const Field& element : value.elements("a list of value names")) {
        layer.reads.push_back(value_ref(element));
      }
      if (layer.reads.empty()) value.fail("must not be an empty list");
      continue;
    }
    layer.attrs[name] = model::Attr{.value = attr_value(value),
                                    .where = value.source().ref(value.path(), value.mark())};
  }
  layer.where = entry.source().ref(entry.path(), entry.mark());
  return layer;
}

void expand_into(const Field& list, std::vector<model::LayerSpec>& out);

void expand_repeat(const Field& entry, std::vector<model::LayerSpec>& out) {
  const MapReader map(entry, {"repeat", "layers"});
  const Field repeat = map.required("repeat");
  const int64_t count = read_int(repeat, at_least(1));
  const Field layers = map.required("layers");
  const auto too_many = [&] {
    repeat.fail(fmt::format("expands the model to more than {} layers", kMaxLayers));
  };
  // Each repetition adds at least one layer: a count above the cap fails before expanding.
  if (count > static_cast<int64_t>(kMaxLayers)) too_many();
  for (int64_t i = 0; i < count; ++i) {
    expand_into(layers, out);
    if (out.size() > kMaxLayers) too_many();
  }
}

void expand_into(const Field& list, std::vector<model::LayerSpec>& out) {
  if (!list.node().IsSequence()) list.fail("expected a list of layers, got " + list.describe());
  if (list.node().size() == 0) list.fail("must not be an empty list");
  for (size_t i = 0; i < list.node().size(); ++i) {
    const YAML::Node node = list.node()[i];
    const Field entry(list.source(), node, node.Mark(),
                      fmt::format("model.layers[{}]", out.size()));
    if (!node.IsMap()) {
      entry.fail("expected a map with a 'type' or a 'repeat' key, got " + entry.describe());
    }
    if (node["repeat"]) {
      expand_repeat(entry, out);
    } else {
      out.push_back(read_layer(entry));
    }
  }
}

}  // namespace

std::vector<model::LayerSpec> expand_layers(const Field& layers) {
  std::vector<model::LayerSpec> out;
  expand_into(layers, out);
  return out;
}

}  // namespace mpipe::config
