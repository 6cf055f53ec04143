// Source: where a value of the experiment came from (file and line, or a --set override),
// for error messages and for the SourceRefs the model builder reports with.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "model/layer_spec.h"

namespace mpipe::config {

// Errors name values from the file as "<file>:<line>: <key.path>: <message>" (line 1-based).
// Values that a --set override put into the tree have no line in any file; their errors read
// "--set <key.path>: <message>", and their SourceRefs are {file "--set", line 0, path}.
class Source {
 public:
  // `overridden_paths`: the key paths that --set overrides created or replaced; everything
  // below one of them comes from the command line.
  Source(std::string file, std::vector<std::string> overridden_paths);

  const std::string& file() const { return file_; }
  bool overridden(std::string_view path) const;

  // Throws InputError "<file>:<line>: <path>: <message>" (or "--set <path>: <message>");
  // without a path: "<file>:<line>: <message>"; without a line: "<file>: <path>: <message>".
  [[noreturn]] void fail(std::string_view path, const YAML::Mark& mark,
                         std::string_view message) const;

  model::SourceRef ref(std::string_view path, const YAML::Mark& mark) const;

 private:
  std::string file_;
  std::vector<std::string> overridden_paths_;
};

}  // namespace mpipe::config
