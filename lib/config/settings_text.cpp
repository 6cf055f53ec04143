// Resolved settings written as sorted "key: value" lines, and the keys where two differ.
#include "config/settings_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sstream>
#include <vector>

namespace mpipe::config {
namespace {

using Settings = std::map<std::string, std::string>;

Settings parse(const std::string& text) {
  Settings settings;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(": ");
    if (colon != std::string::npos) {
      settings.insert_or_assign(line.substr(0, colon), line.substr(colon + 2));
    }
  }
  return settings;
}

// Long values shortened for a one-line message.
std::string shown(const std::string& value) {
  constexpr size_t kMax = 60;
  return value.size() <= kMax ? value : value.substr(0, kMax) + "...";
}

}  // namespace

std::string settings_text(const Settings& settings) {
  std::string text;
  for (const auto& [key, value] : settings) {
    text += key + ": ";
    for (char c : value) text += c == '\n' ? std::string("\\n") : std::string(1, c);
    text += '\n';
  }
  return text;
}

std::optional<std::string> describe_settings_difference(const std::string& mine,
                                                        const std::string& theirs,
                                                        const std::string& them) {
  constexpr size_t kNamed = 3;  // differences named; the others are counted
  const Settings a = parse(mine), b = parse(theirs);
  std::vector<std::string> differences;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() || j != b.end()) {
    if (j == b.end() || (i != a.end() && i->first < j->first)) {
      differences.push_back(
          fmt::format("{} is {} here, not set on {}", i->first, shown(i->second), them));
      ++i;
    } else if (i == a.end() || j->first < i->first) {
      differences.push_back(
          fmt::format("{} is not set here, {} on {}", j->first, shown(j->second), them));
      ++j;
    } else {
      if (i->second != j->second) {
        differences.push_back(fmt::format("{} is {} here, {} on {}", i->first, shown(i->second),
                                          shown(j->second), them));
      }
      ++i;
      ++j;
    }
  }
  if (differences.empty()) return std::nullopt;
  const size_t more = differences.size() > kNamed ? differences.size() - kNamed : 0;
  differences.resize(differences.size() - more);
  std::string text = fmt::format("{}", fmt::join(differences, "; "));
  if (more > 0) text += fmt::format("; and {} more", more);
  return text;
}

}  // namespace mpipe::config
