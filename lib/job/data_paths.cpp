// Missing data paths as one line naming the key's file and line, and the working directory a
// relative path was read from.
#include "job/data_paths.h"

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/shard_files.h"

namespace mpipe::job {
namespace {

namespace fs = std::filesystem;

// " (a relative path, read from the working directory /home/u)" for a relative `path`, else "".
std::string relative_note(const std::string& path) {
  if (fs::path(path).is_absolute()) return "";
  std::error_code error;
  const fs::path here = fs::current_path(error);
  return error
             ? " (a relative path)"
             : fmt::format(" (a relative path, read from the working directory {})", here.string());
}

void check_exists(const config::Experiment& experiment, const std::string& key,
                  const std::string& path) {
  std::error_code error;
  if (path.empty() || fs::exists(path, error)) return;
  throw InputError(
      fmt::format("{}: {} does not exist{}", experiment.where(key), path, relative_note(path)));
}

// Each pattern matches a file; `key` is where the list was set, `suffix` the list's place in it
// ("[1].shards" for a mix's second list).
void check_shards(const config::Experiment& experiment, const std::string& key,
                  const std::string& suffix, const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    try {
      data::shard_files({pattern}, experiment.where(key) + suffix);
    } catch (const InputError& e) {
      throw InputError(e.what() + relative_note(pattern));
    }
  }
}

}  // namespace

void check_data_paths(const config::Experiment& experiment) {
  const data::DataConfig& data = experiment.data;
  check_exists(experiment, "data.path", data.path);
  check_shards(experiment, "data.train", "", data.train_shards);
  for (size_t list = 0; list < data.train_mix.size(); ++list) {
    check_shards(experiment, "data.train", fmt::format("[{}].shards", list),
                 data.train_mix[list].shards);
  }
  check_shards(experiment, "data.val", "", data.val_shards);
  check_tokenizer_path(experiment);
}

void check_tokenizer_path(const config::Experiment& experiment) {
  check_exists(experiment, "data.tokenizer", experiment.data.tokenizer);
}

}  // namespace mpipe::job
