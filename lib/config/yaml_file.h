// Reading an experiment file into a YAML tree, with errors that name the file and line.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace mpipe::config {

// The file's first YAML document. Throws InputError "<path>: cannot open file" or
// "<path>:<line>: invalid YAML: <yaml-cpp message>".
YAML::Node read_yaml_file(const std::string& path);

}  // namespace mpipe::config
