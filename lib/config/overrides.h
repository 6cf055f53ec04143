// --set overrides: "key.path=value" strings applied to the experiment tree before it is read,
// so overridden values are checked exactly like values from the file.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace mpipe::config {

// Applies each override in order: the value is parsed as YAML ("4", "0.01", "auto",
// "[2, 2]", "{type: relu}") and put at the key path, creating maps on the way (a null
// `root` becomes a map). A key path names map keys and items of existing lists by index
// (`model.layers[0].units`); a key name the config does not know is left for the config's check
// to name. Returns the key paths created or replaced, so errors about them can say they came from
// --set. Throws InputError:
//   "--set 'text': expected key.path=value"          (no '=', or an empty key name)
//   "--set 'text': expected a list index such as [0] after a.b"
//   "--set a.b: invalid YAML value: <yaml-cpp message>"
//   "--set a.b.c: a.b is not a map", "--set a.b[0]: a.b is not a list"
//   "--set a.b[5]: a.b has 2 item(s), counted from 0"
std::vector<std::string> apply_overrides(YAML::Node& root,
                                         const std::vector<std::string>& overrides);

}  // namespace mpipe::config
