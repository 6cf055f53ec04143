// --set overrides: parsing "key.path=value" and applying it to the YAML tree.
#include "config/overrides.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace mpipe::config {
namespace {

bool is_key_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
}

std::vector<std::string> split_key_path(const std::string& override_text) {
  const size_t equals = override_text.find('=');
  check_input(equals != std::string::npos, "--set '{}': expected key.path=value", override_text);
  const std::string key_path = override_text.substr(0, equals);
  std::vector<std::string> keys;
  size_t begin = 0;
  while (true) {
    const size_t dot = key_path.find('.', begin);
    keys.push_back(key_path.substr(begin, dot == std::string::npos ? dot : dot - begin));
    check_input(is_key_name(keys.back()), "--set '{}': expected key.path=value", override_text);
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return keys;
}

YAML::Node parse_value(const std::string& key_path, const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("--set {}: invalid YAML value: {}", key_path, e.msg));
  }
}

// Puts `value` at `keys` below `root`; appends the paths it creates or replaces to `touched`.
void apply_one(YAML::Node& root, const std::vector<std::string>& keys, const YAML::Node& value,
               std::vector<std::string>& touched) {
  std::string full_path;
  for (const std::string& key : keys) full_path += (full_path.empty() ? "" : ".") + key;
  YAML::Node map = root;  // shares root's node
  std::string path;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    path += (path.empty() ? "" : ".") + keys[i];
    YAML::Node next = map[keys[i]];
    if (!next.IsDefined() || next.IsNull()) {
      map[keys[i]] = YAML::Node(YAML::NodeType::Map);
      touched.push_back(path);
      next.reset(map[keys[i]]);
    }
    check_input(next.IsMap(), "--set {}: {} is not a map", full_path, path);
    map.reset(next);
  }
  map[keys.back()] = value;
  touched.push_back(full_path);
}

}  // namespace

std::vector<std::string> apply_overrides(YAML::Node& root,
                                         const std::vector<std::string>& overrides) {
  std::vector<std::string> touched;
  for (const std::string& text : overrides) {
    const std::vector<std::string> keys = split_key_path(text);
    const std::string key_path = text.substr(0, text.find('='));
    const YAML::Node value = parse_value(key_path, text.substr(text.find('=') + 1));
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    check_input(root.IsMap(), "--set {}: the experiment file is not a map of sections", key_path);
    apply_one(root, keys, value, touched);
  }
  return touched;
}

}  // namespace mpipe::config
