// MapReader: reading and checking the keys of one YAML map.
#include "config/map_reader.h"

#include <fmt/format.h>

#include <algorithm>

namespace mpipe::config {

MapReader::MapReader(const Field& field) : field_(field) {
  const YAML::Node& node = field.node();
  if (field.absent() || node.IsNull()) return;
  if (!node.IsMap()) field.fail("expected a map, got " + field.describe());
  for (const auto& key_value : node) {
    const YAML::Node key = key_value.first;
    const YAML::Node value = key_value.second;
    if (!key.IsScalar()) {
      Field(field.source(), key, key.Mark(), field.path()).fail("keys must be plain names");
    }
    const std::string path = child_path(key.Scalar());
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].first == key.Scalar()) {
        Field(field.source(), key, key.Mark(), path)
            .fail(fmt::format("duplicate key (first at line {})", key_marks_[i].line + 1));
      }
    }
    // A null value's mark points past the key; the key's own line is where it was written.
    const YAML::Mark mark = value.IsNull() ? key.Mark() : value.Mark();
    entries_.emplace_back(key.Scalar(), Field(field.source(), value, mark, path));
    key_marks_.push_back(key.Mark());
  }
}

MapReader::MapReader(const Field& field, std::vector<std::string_view> known) : MapReader(field) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& [name, value] = entries_[i];
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string names;
    for (std::string_view k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    Field(field.source(), value.node(), key_marks_[i], value.path())
        .fail(fmt::format("unknown key (known: {})", names));
  }
}

std::optional<Field> MapReader::get(std::string_view key) const {
  for (const auto& [name, value] : entries_) {
    if (name == key) return value;
  }
  return std::nullopt;
}

Field MapReader::child(std::string_view key) const {
  if (auto value = get(key)) return *value;
  return Field(field_.source(), child_path(key));
}

Field MapReader::required(std::string_view key) const {
  if (auto value = get(key)) return *value;
  Field(field_.source(), YAML::Node(), field_.mark(), child_path(key))
      .fail("required key is missing");
}

std::string MapReader::child_path(std::string_view key) const {
  return field_.path().empty() ? std::string(key) : field_.path() + "." + std::string(key);
}

}  // namespace mpipe::config
