// CheckpointStore: step folders, shard files, meta.json commit and pruning to the newest `keep`.
#include "checkpoint/checkpoint_store.h"

#include <fmt/chrono.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "checkpoint/atomic_file.h"
#include "core/error.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kStepPrefix = "step_";

// The step of a folder named step_<digits>, or nullopt for any other name.
std::optional<int64_t> parse_step_folder(const std::string& name) {
  if (!name.starts_with(kStepPrefix) || name.size() == kStepPrefix.size()) return std::nullopt;
  int64_t step = 0;
  const char* first = name.data() + kStepPrefix.size();
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, step);
  if (ec != std::errc() || end != last || *first == '-' || *first == '+') return std::nullopt;
  return step;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(now));
}

}  // namespace

CheckpointStore::CheckpointStore(std::string run_dir, int keep)
    : run_dir_(std::move(run_dir)), keep_(keep) {
  check_input(keep_ >= 1, "checkpoint.keep: must be >= 1, got {}", keep_);
}

std::string CheckpointStore::checkpoints_dir() const {
  return (fs::path(run_dir_) / "checkpoints").string();
}

std::string CheckpointStore::step_dir(int64_t step) const {
  check(step >= 0, "checkpoint step must be >= 0, got {}", step);
  return (fs::path(checkpoints_dir()) / fmt::format("step_{:08d}", step)).string();
}

std::string CheckpointStore::shard_path(int64_t step, int stage) const {
  check(stage >= 0, "checkpoint stage must be >= 0, got {}", stage);
  return (fs::path(step_dir(step)) / fmt::format("stage_{}.safetensors", stage)).string();
}

std::string CheckpointStore::meta_path(int64_t step) const {
  return (fs::path(step_dir(step)) / "meta.json").string();
}

void CheckpointStore::write_shard(int64_t step, int stage, const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  const std::string dir = step_dir(step);
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, "{}: cannot create checkpoint folder: {}", dir, ec.message());
  fs::remove(meta_path(step), ec);  // a step being rewritten is no longer committed
  check(!ec, "{}: cannot remove: {}", meta_path(step), ec.message());

  std::map<std::string, std::string> shard_metadata = metadata;
  shard_metadata["step"] = std::to_string(step);
  shard_metadata["stage"] = std::to_string(stage);
  write_safetensors(shard_path(step, stage), tensors, shard_metadata);
}

void CheckpointStore::commit(int64_t step, const nlohmann::json& meta) {
  check(meta.is_object() && meta.contains("num_stages") && meta["num_stages"].is_number_integer() &&
            meta["num_stages"].get<int64_t>() >= 1,
        "checkpoint meta for step {} needs an integer num_stages >= 1", step);
  const int64_t num_stages = meta["num_stages"].get<int64_t>();
  for (int64_t stage = 0; stage < num_stages; ++stage) {
    const std::string shard = shard_path(step, static_cast<int>(stage));
    check(fs::exists(shard), "{}: missing, cannot commit step {}", shard, step);
  }
  nlohmann::json full = meta;
  full["step"] = step;
  if (!full.contains("time")) full["time"] = utc_now_iso8601();
  write_file_atomically(meta_path(step), full.dump(2) + "\n");
  prune(step);
}

std::vector<int64_t> CheckpointStore::step_folders() const {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (!fs::is_directory(checkpoints_dir(), ec)) return steps;
  for (const fs::directory_entry& entry : fs::directory_iterator(checkpoints_dir(), ec)) {
    if (!entry.is_directory(ec)) continue;
    if (auto step = parse_step_folder(entry.path().filename().string())) steps.push_back(*step);
  }
  check(!ec, "{}: cannot list: {}", checkpoints_dir(), ec.message());
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::vector<int64_t> CheckpointStore::committed_steps() const {
  std::vector<int64_t> committed;
  for (int64_t step : step_folders()) {
    if (fs::exists(meta_path(step))) committed.push_back(step);
  }
  return committed;
}

std::optional<int64_t> CheckpointStore::latest_committed() const {
  const std::vector<int64_t> committed = committed_steps();
  if (committed.empty()) return std::nullopt;
  return committed.back();
}

void CheckpointStore::prune(int64_t committed_step) const {
  const std::vector<int64_t> committed = committed_steps();
  const size_t num_old = committed.size() > static_cast<size_t>(keep_)
                             ? committed.size() - static_cast<size_t>(keep_)
                             : 0;
  std::vector<int64_t> doomed(committed.begin(), committed.begin() + static_cast<long>(num_old));
  for (int64_t step : step_folders()) {
    if (step < committed_step && !fs::exists(meta_path(step))) doomed.push_back(step);
  }
  for (int64_t step : doomed) {
    std::error_code ec;
    // meta.json goes first, so a folder that cannot be removed completely reads as incomplete.
    fs::remove(meta_path(step), ec);
    fs::remove_all(step_dir(step), ec);
    if (ec) spdlog::warn("{}: cannot remove old checkpoint: {}", step_dir(step), ec.message());
  }
}

nlohmann::json CheckpointStore::read_meta(int64_t step) const {
  const std::string path = meta_path(step);
  std::ifstream in(path);
  check_input(in.is_open(), "{}: missing: step {} is not a committed checkpoint", path, step);
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  check_input(meta.is_object(), "{}: not a JSON object", path);
  const auto num_stages = meta.find("num_stages");
  check_input(num_stages != meta.end() && num_stages->is_number_integer() &&
                  num_stages->get<int64_t>() >= 1,
              "{}: num_stages must be an integer >= 1", path);
  const auto stored_step = meta.find("step");
  check_input(stored_step != meta.end() && stored_step->is_number_integer() &&
                  stored_step->get<int64_t>() == step,
              "{}: step must be {} (the folder's step)", path, step);
  return meta;
}

std::vector<NamedTensor> CheckpointStore::read_all(int64_t step) const {
  const int64_t num_stages = read_meta(step)["num_stages"].get<int64_t>();
  std::vector<NamedTensor> merged;
  std::unordered_map<std::string, int64_t> stage_of;
  for (int64_t stage = 0; stage < num_stages; ++stage) {
    const std::string path = shard_path(step, static_cast<int>(stage));
    check_input(fs::exists(path), "{}: missing (meta.json says {} stages)", path, num_stages);
    for (NamedTensor& t : read_safetensors(path).tensors) {
      const auto [it, inserted] = stage_of.emplace(t.name, stage);
      check_input(inserted, "{}: tensor '{}' is also in stage_{}.safetensors", path, t.name,
                  it->second);
      merged.push_back(std::move(t));
    }
  }
  return merged;
}

}  // namespace mpipe::checkpoint
