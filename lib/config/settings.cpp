// Experiment settings flattened to sorted "key.path: value" lines, and their first difference.
#include "config/settings.h"

#include <fmt/format.h>

#include <map>
#include <sstream>

namespace mpipe::config {
namespace {

using Settings = std::map<std::string, std::string>;

void flatten(const YAML::Node& node, const std::string& path, Settings& out) {
  if (node.IsMap()) {
    if (node.size() == 0) out.insert_or_assign(path, std::string("{}"));
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      flatten(entry.second, path.empty() ? key : path + "." + key, out);
    }
  } else if (node.IsSequence()) {
    if (node.size() == 0) out.insert_or_assign(path, std::string("[]"));
    for (size_t i = 0; i < node.size(); ++i) {
      flatten(node[i], fmt::format("{}[{}]", path, i), out);
    }
  } else if (node.IsScalar()) {
    std::string value;
    for (char c : node.Scalar()) value += c == '\n' ? std::string("\\n") : std::string(1, c);
    out.insert_or_assign(path, std::move(value));
  } else {
    out.insert_or_assign(path, std::string("~"));  // null
  }
}

Settings parse(const std::string& text) {
  Settings settings;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(": ");
    if (colon != std::string::npos) settings[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return settings;
}

// Long values shortened for a one-line message.
std::string shown(const std::string& value) {
  constexpr size_t kMax = 60;
  return value.size() <= kMax ? value : value.substr(0, kMax) + "...";
}

}  // namespace

std::string flatten_settings(const YAML::Node& tree) {
  Settings settings;
  if (tree.IsDefined() && !tree.IsNull()) flatten(tree, "", settings);
  std::string text;
  for (const auto& [key, value] : settings) text += key + ": " + value + "\n";
  return text;
}

std::optional<std::string> describe_settings_difference(const std::string& mine,
                                                        const std::string& theirs,
                                                        const std::string& them) {
  const Settings a = parse(mine), b = parse(theirs);
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() || j != b.end()) {
    if (j == b.end() || (i != a.end() && i->first < j->first)) {
      return fmt::format("{} is {} here, not set on {}", i->first, shown(i->second), them);
    }
    if (i == a.end() || j->first < i->first) {
      return fmt::format("{} is not set here, {} on {}", j->first, shown(j->second), them);
    }
    if (i->second != j->second) {
      return fmt::format("{} is {} here, {} on {}", i->first, shown(i->second), shown(j->second),
                         them);
    }
    ++i;
    ++j;
  }
  return std::nullopt;
}

}  // namespace mpipe::config
