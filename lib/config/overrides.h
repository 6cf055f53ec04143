// --set overrides: "key.path=value" strings applied to the experiment tree before it is read,
// so overridden values are checked exactly like values from the file.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace mpipe::config {

// Applies each override in order: the value is parsed as YAML ("4", "0.01", "auto",
// "[2, 2]", "{type: relu}") and put at the key path, creating maps on the way (a null
// `root` becomes a map). Returns the key paths created or replaced, so errors about them can
// say they came from --set. Key paths name map keys only (no list indices). Throws InputError:
//   "--set 'text': expected key.path=value"          (no '=', or an empty/odd key name)
//   "--set a.b: invalid YAML value: <yaml-cpp message>"
//   "--set a.b.c: a.b is not a map"
std::vector<std::string> apply_overrides(YAML::Node& root,
                                         const std::vector<std::string>& overrides);

}  // namespace mpipe::config
