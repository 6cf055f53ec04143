// --set overrides: parsing "key.path=value" and applying it to the YAML tree.
#include "config/overrides.h"

#include <charconv>
#include <optional>

#include "core/error.h"

namespace mpipe::config {
namespace {

// One step of a key path: a map key, or an index into a list (`layers[2]`: the key, then 2).
struct Step {
  std::string key = {};
  std::optional<size_t> index = {};
};

// The path as the config's errors name it: "model.layers[0].units".
std::string path_text(const std::vector<Step>& steps, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) {
    if (steps[i].index) {
      text += fmt::format("[{}]", *steps[i].index);
    } else {
      text += (text.empty() ? "" : ".") + steps[i].key;
    }
  }
  return text;
}

// "a.b[1].c" -> a, b, [1], c. Key names are any non-empty text without '.', '[' or ']' (a name the
// config does not know is refused by the config's own check, which lists the known ones); an
// index is decimal digits.
std::vector<Step> split_key_path(const std::string& override_text) {
  const size_t equals = override_text.find('=');
  check_input(equals != std::string::npos, "--set '{}': expected key.path=value", override_text);
  const std::string key_path = override_text.substr(0, equals);
  std::vector<Step> steps;
  size_t at = 0;
  while (true) {
    const size_t end = key_path.find_first_of(".[]", at);
    steps.push_back({.key = key_path.substr(at, end == std::string::npos ? end : end - at)});
    check_input(!steps.back().key.empty(), "--set '{}': expected key.path=value", override_text);
    at = end;
    while (at != std::string::npos && key_path[at] == '[') {
      const size_t close = key_path.find(']', at);
      size_t index = 0;
      const char* first = key_path.data() + at + 1;
      const char* last = key_path.data() + (close == std::string::npos ? key_path.size() : close);
      const auto [stop, error] = std::from_chars(first, last, index);
      check_input(
          close != std::string::npos && first != last && stop == last && error == std::errc(),
          "--set '{}': expected a list index such as [0] after {}", override_text,
          path_text(steps, steps.size()));
      steps.push_back({.index = index});
      at = close + 1 == key_path.size() ? std::string::npos : close + 1;
    }
    if (at == std::string::npos) break;
    check_input(key_path[at] == '.', "--set '{}': expected key.path=value", override_text);
    ++at;
  }
  return steps;
}

YAML::Node parse_value(const std::string& key_path, const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("--set {}: invalid YAML value: {}", key_path, e.msg));
  }
}

// Puts `value` at `steps` below `root`; appends the paths it creates or replaces to `touched`.
// Missing map keys on the way become maps; a list index names an item the list has.
void apply_one(YAML::Node& root, const std::vector<Step>& steps, const YAML::Node& value,
               std::vector<std::string>& touched) {
  const std::string full_path = path_text(steps, steps.size());
  YAML::Node node = root;  // shares root's node
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string parent = path_text(steps, i);
    const bool last = i + 1 == steps.size();
    YAML::Node next;
    if (steps[i].index) {
      check_input(node.IsSequence(), "--set {}: {} is not a list", full_path, parent);
      check_input(*steps[i].index < node.size(), "--set {}: {} has {} item(s), counted from 0",
                  full_path, parent, node.size());
      if (last) {
        node[*steps[i].index] = value;
        break;
      }
      next.reset(node[*steps[i].index]);
    } else {
      check_input(node.IsMap(), "--set {}: {} is not a map", full_path, parent);
      if (last) {
        node[steps[i].key] = value;
        break;
      }
      next.reset(node[steps[i].key]);
      if ((!next.IsDefined() || next.IsNull()) && !steps[i + 1].index) {
        node[steps[i].key] = YAML::Node(YAML::NodeType::Map);
        touched.push_back(path_text(steps, i + 1));
        next.reset(node[steps[i].key]);
      }
    }
    node.reset(next);
  }
  touched.push_back(full_path);
}

}  // namespace

std::vector<std::string> apply_overrides(YAML::Node& root,
                                         const std::vector<std::string>& overrides) {
  std::vector<std::string> touched;
  for (const std::string& text : overrides) {
    const std::vector<Step> steps = split_key_path(text);
    const std::string key_path = path_text(steps, steps.size());
    const YAML::Node value = parse_value(key_path, text.substr(text.find('=') + 1));
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    check_input(root.IsMap(), "--set {}: the experiment file is not a map of sections", key_path);
    apply_one(root, steps, value, touched);
  }
  return touched;
}

}  // namespace mpipe::config
