// Reading an experiment file into a YAML tree, with errors that name the file and line.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace mpipe::config {

// The text of the experiment file `path`, a regular file (read_regular_file: a FIFO or a device
// such as /dev/zero is refused, never read). Throws InputError "<path>: is a directory, not an
// experiment file", "<path>: cannot open: <reason>" or "<path>: an experiment file must be a
// regular file".
std::string read_experiment_text(const std::string& path);

// The file's first YAML document (read_experiment_text). Throws InputError as that does, or
// "<path>:<line>: invalid YAML: <yaml-cpp message>".
YAML::Node read_yaml_file(const std::string& path);

}  // namespace mpipe::config
