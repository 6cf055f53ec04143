// MapReader: the keys of one YAML map (an experiment section, a layer entry), checked for
// unknown and repeated keys before any value is read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/field.h"

namespace mpipe::config {

class MapReader {
 public:
  // Accepts any key. `field` may be absent or null (an empty section); any other non-map fails
  // "expected a map, got ...". A repeated key fails "duplicate key (first at line N)".
  explicit MapReader(const Field& field);
  // Also fails "unknown key (known: a, b, c)" on the first key not in `known`.
  MapReader(const Field& field, std::vector<std::string_view> known);

  const Field& field() const { return field_; }
  const std::vector<std::pair<std::string, Field>>& entries() const { return entries_; }

  // The value of `key`, if the map has it (possibly null).
  std::optional<Field> get(std::string_view key) const;
  // The value of `key`, or an absent Field (for sections and keys that take defaults).
  Field child(std::string_view key) const;
  // The value of `key`; fails "<path>.<key>: required key is missing" without it.
  Field required(std::string_view key) const;

 private:
  std::string child_path(std::string_view key) const;

  Field field_;
  std::vector<std::pair<std::string, Field>> entries_;
  std::vector<YAML::Mark> key_marks_;  // where each entry's key is written
};

}  // namespace mpipe::config
