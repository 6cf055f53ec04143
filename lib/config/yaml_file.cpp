// Reading an experiment file into a YAML tree.
#include "config/yaml_file.h"

#include <filesystem>

#include "core/error.h"
#include "core/regular_file.h"

namespace mpipe::config {

std::string read_experiment_text(const std::string& path) {
  std::error_code ec;
  check_input(!std::filesystem::is_directory(path, ec),
              "{}: is a directory, not an experiment file", path);
  return read_regular_file(path, "an experiment file must be a regular file");
}

YAML::Node read_yaml_file(const std::string& path) {
  const std::string text = read_experiment_text(path);
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("{}:{}: invalid YAML: {}", path, e.mark.line + 1, e.msg));
  }
}

}  // namespace mpipe::config
