// Reading an experiment file into a YAML tree.
#include "config/yaml_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace mpipe::config {

YAML::Node read_yaml_file(const std::string& path) {
  std::error_code ec;
  check_input(!std::filesystem::is_directory(path, ec),
              "{}: is a directory, not an experiment file", path);
  std::ifstream in(path);
  check_input(in.good(), "{}: cannot open file", path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return YAML::Load(text.str());
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("{}:{}: invalid YAML: {}", path, e.mark.line + 1, e.msg));
  }
}

}  // namespace mpipe::config
