// Stored settings back into overrides: values that read back as stored, the layers as one list.
#include "config/stored_settings.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>

#include "config/field.h"
#include "config/overrides.h"
#include "config/sections.h"
#include "config/source.h"

namespace mpipe::config {
namespace {

using Settings = std::map<std::string, std::string>;

constexpr std::string_view kLayersPrefix = "model.layers[";
constexpr const char* kScheduleSteps = "optimizer.schedule.total_steps";

// Whether an override of `path` ("train", "model.layers", "optimizer.lr") sets `key`.
bool covers(const std::string& path, const std::string& key) {
  return key == path || key.starts_with(path + ".") || key.starts_with(path + "[");
}

// A node that reads back as `text`: its YAML parse when that gives `text` again (numbers,
// words, lists), else `text` as a string (an empty one, a path with " #" in it, ...).
YAML::Node value_node(const std::string& text) {
  try {
    YAML::Node node = YAML::Load(text);
    if (node.IsSequence() || (node.IsScalar() && node.Scalar() == text && node.Tag() != "!")) {
      return node;
    }
  } catch (const YAML::Exception&) {
    // Not YAML by itself: a string.
  }
  return YAML::Node(text);
}

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

// The stored model.layers[i].* keys as the list of layer maps they came from, in index order.
YAML::Node stored_layers(const Settings& stored) {
  std::map<int, YAML::Node> layers;
  for (const auto& [key, value] : stored) {
    if (!key.starts_with(kLayersPrefix)) continue;
    const size_t close = key.find("].", kLayersPrefix.size());
    int index = 0;
    const char* first = key.data() + kLayersPrefix.size();
    if (close == std::string::npos ||
        std::from_chars(first, key.data() + close, index).ptr != key.data() + close) {
      continue;  // not a layer's key
    }
    layers[index][key.substr(close + 2)] = value_node(value);
  }
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& [index, layer] : layers) list.push_back(layer);
  return list;
}

}  // namespace

SettingsRestore resume_overrides(Settings stored, const Settings& file,
                                 const std::vector<std::string>& command_line) {
  if (!stored.contains(kScheduleSteps) && stored.contains("train.steps")) {
    stored[kScheduleSteps] = stored.at("train.steps");
  }
  const auto set_by_command_line = [&](const std::string& key) {
    return std::ranges::any_of(command_line, [&](const std::string& text) {
      return covers(text.substr(0, text.find('=')), key);
    });
  };
  std::set<std::string> keys;
  for (const auto& [key, value] : stored) keys.insert(key);
  for (const auto& [key, value] : file) keys.insert(key);
  SettingsRestore restore;
  bool layers_differ = false;
  for (const std::string& key : keys) {
    const auto kept = stored.find(key);
    const auto given = file.find(key);
    const bool in_stored = kept != stored.end();
    const bool in_file = given != file.end();
    if (set_by_command_line(key)) continue;
    const bool model = key.starts_with("model.");
    if (!model && !(in_stored && in_file)) continue;
    if (in_stored && in_file && kept->second == given->second) continue;
    const bool layer = key.starts_with(kLayersPrefix);
    if (!in_stored && !layer && key != "model.init") continue;  // a key this run cannot restore
    restore.restored.push_back(fmt::format("{}: {} (file: {})", key,
                                           in_stored ? kept->second : "(none)",
                                           in_file ? given->second : "(none)"));
    if (layer) {
      layers_differ = true;
    } else {
      // model.init is stored only when set.
      restore.overrides.push_back(key + "=" +
                                  flow_text(value_node(in_stored ? kept->second : "default")));
    }
  }
  if (layers_differ)
    restore.overrides.push_back("model.layers=" + flow_text(stored_layers(stored)));
  return restore;
}

StoredModel stored_model(const Settings& stored, const std::string& source) {
  std::vector<std::string> overrides;
  for (const auto& [key, value] : stored) {
    if ((key.starts_with("model.") || key.starts_with("optimizer.")) &&
        !key.starts_with(kLayersPrefix)) {
      overrides.push_back(key + "=" + flow_text(value_node(value)));
    }
  }
  overrides.push_back("model.layers=" + flow_text(stored_layers(stored)));
  YAML::Node tree(YAML::NodeType::Map);
  apply_overrides(tree, overrides);
  const Source file(source, {});  // errors name the file and the key, as it has no lines
  const auto section = [&](const char* name) {
    return Field(file, tree[name], YAML::Mark::null_mark(), name);
  };
  return {.model = parse_model(section("model")),
          .optimizer = parse_optimizer(section("optimizer"))};
}

}  // namespace mpipe::config
