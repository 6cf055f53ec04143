// Glob expansion of shard patterns.
#include "data/shard_files.h"

#include <glob.h>

#include "core/error.h"

namespace mpipe::data {
namespace {

std::vector<std::string> glob_matches(const std::string& pattern, const std::string& key) {
  glob_t found{};
  const int status = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &found);
  std::vector<std::string> files(found.gl_pathv, found.gl_pathv + found.gl_pathc);
  ::globfree(&found);
  check_input(status == 0 && !files.empty(), "{}: no file matches '{}'", key, pattern);
  return files;  // glob sorts them
}

}  // namespace

std::vector<std::string> shard_files(const std::vector<std::string>& patterns,
                                     const std::string& key) {
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    for (std::string& file : glob_matches(pattern, key)) files.push_back(std::move(file));
  }
  return files;
}

}  // namespace mpipe::data
