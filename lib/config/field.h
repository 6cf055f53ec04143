// Field: one value of the experiment tree with its key path and position, and readers that
// convert it to a C++ type or throw an InputError naming the file, line and key path.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/source.h"
#include "core/enum_names.h"

namespace mpipe::config {

class Field {
 public:
  // An absent value: a key the file does not have (`node` undefined, `mark` null).
  Field(const Source& source, std::string path);
  Field(const Source& source, YAML::Node node, YAML::Mark mark, std::string path);

  const Source& source() const { return *source_; }
  const YAML::Node& node() const { return node_; }
  const YAML::Mark& mark() const { return mark_; }
  const std::string& path() const { return path_; }
  bool absent() const { return !node_.IsDefined(); }
  bool is_null() const { return node_.IsDefined() && node_.IsNull(); }

  [[noreturn]] void fail(std::string_view message) const;
  // The scalar as written, for range errors: "got -1".
  const std::string& text() const { return node_.Scalar(); }
  // What the value is, for type errors: "'abc'", "a list", "a map" or "nothing".
  std::string describe() const;

  int64_t as_int() const;
  uint64_t as_uint() const;
  double as_double() const;
  bool as_bool() const;
  std::string as_string() const;
  // The entries of a list, with paths "<path>[i]"; fails "expected <what>, got ..." otherwise.
  std::vector<Field> elements(std::string_view what) const;

  // One of the named options: an enum's table (core/enum_names.h) or a braced list of
  // {word, value}; fails "expected one of a, b, c, got 'x'".
  template <typename T, std::size_t N>
  T as_choice(const EnumNames<T, N>& options) const {
    return choose<T>(options);
  }
  template <typename T>
  T as_choice(std::initializer_list<EnumName<T>> options) const {
    return choose<T>(std::span(options.begin(), options.size()));
  }

 private:
  template <typename T>
  T choose(std::span<const EnumName<T>> options) const {
    if (node_.IsScalar()) {
      for (const auto& [name, value] : options) {
        if (node_.Scalar() == name) return value;
      }
    }
    std::string names;
    for (const auto& option : options) {
      if (!names.empty()) names += ", ";
      names += option.first;
    }
    fail("expected one of " + names + ", got " + describe());
  }

  const Source* source_;
  YAML::Node node_;
  YAML::Mark mark_;
  std::string path_;
};

}  // namespace mpipe::config
