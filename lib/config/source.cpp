// Source: formatting where a value came from.
#include "config/source.h"

#include "core/error.h"

namespace mpipe::config {

Source::Source(std::string file, std::vector<std::string> overridden_paths)
    : file_(std::move(file)), overridden_paths_(std::move(overridden_paths)) {}

bool Source::overridden(std::string_view path) const {
  for (const std::string& o : overridden_paths_) {
    if (path == o) return true;
    if (path.size() > o.size() && path.starts_with(o) &&
        (path[o.size()] == '.' || path[o.size()] == '[')) {
      return true;
    }
  }
  return false;
}

void Source::fail(std::string_view path, const YAML::Mark& mark, std::string_view message) const {
  if (!path.empty() && overridden(path)) {
    throw InputError(fmt::format("--set {}: {}", path, message));
  }
  std::string where = file_;
  if (!mark.is_null()) where += fmt::format(":{}", mark.line + 1);
  if (!path.empty()) where += fmt::format(": {}", path);
  throw InputError(fmt::format("{}: {}", where, message));
}

model::SourceRef Source::ref(std::string_view path, const YAML::Mark& mark) const {
  if (overridden(path)) return {.file = "--set", .line = 0, .path = std::string(path)};
  return {.file = file_, .line = mark.is_null() ? 0 : mark.line + 1, .path = std::string(path)};
}

}  // namespace mpipe::config
