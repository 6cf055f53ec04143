// CheckpointStore: step folders, shard files, meta.json commit with checksums (of the shards and
// of itself), verified reads, and pruning to the newest `keep`.
#include "checkpoint/checkpoint_store.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <exception>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "checkpoint/atomic_file.h"
#include "core/error.h"
#include "core/host_clock.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kStepPrefix = "step_";
// What every meta.json holds (commit writes them all; the caller's fields come on top).
constexpr std::array<const char*, 5> kRequiredMetaKeys = {kManifestChecksumKey, "num_stages",
                                                          "step", "shards", "time"};

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

std::string shard_file_name(int stage) { return fmt::format("stage_{}.safetensors", stage); }

nlohmann::json shard_json(const ShardRecord& shard) {
  return {{"file", shard_file_name(shard.stage)},
          {"stage", shard.stage},
          {"step", shard.step},
          {"size", shard.digest.size},
          {"crc32", crc32_hex(shard.digest.crc32)}};
}

std::optional<uint32_t> parse_crc32(const nlohmann::json& value) {
  if (!value.is_string() || value.get<std::string>().size() != 8) return std::nullopt;
  const std::string text = value.get<std::string>();
  uint32_t crc = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), crc, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return crc;
}

// The "shards" list of meta.json `path`, validated.
std::vector<ShardRecord> parse_shards(const nlohmann::json& meta, const std::string& path,
                                      int64_t step) {
  const nlohmann::json* shards = &required_key(meta, path, "shards");
  const auto num_stages = meta["num_stages"].get<int64_t>();
  check_input(shards->is_array() && static_cast<int64_t>(shards->size()) == num_stages,
              "{}: shards must be a list of {} entries (num_stages)", path, num_stages);
  std::vector<ShardRecord> records;
  for (int stage = 0; stage < static_cast<int>(num_stages); ++stage) {
    const nlohmann::json& entry = (*shards)[static_cast<size_t>(stage)];
    const auto crc =
        entry.is_object() && entry.contains("crc32") ? parse_crc32(entry["crc32"]) : std::nullopt;
    // Each field as json (null when missing), compared without converting: a value of
    // another type is simply unequal.
    const auto field = [&entry](const char* key) { return entry.value(key, nlohmann::json()); };
    const bool ok = crc && field("file") == shard_file_name(stage) && field("stage") == stage &&
                    field("step").is_number_integer() && field("size").is_number_unsigned();
    check_input(ok,
                "{}: shards[{}] must be {{\"file\": \"{}\", \"stage\": {}, \"step\": <integer>, "
                "\"size\": <bytes>, \"crc32\": <8 hex digits>}}",
                path, stage, shard_file_name(stage), stage);
    records.push_back({.stage = stage,
                       .step = entry["step"].get<int64_t>(),
                       .digest = {.size = entry["size"].get<uint64_t>(), .crc32 = *crc}});
    check_input(records.back().step == step, "{}: shards[{}].step is {}, the folder's step is {}",
                path, stage, records.back().step, step);
  }
  return records;
}

// Why the shard's own metadata does not name the step and stage it is read as, if it doesn't.
std::optional<std::string> identity_mismatch(const std::string& path,
                                             const std::map<std::string, std::string>& meta,
                                             int64_t step, int stage) {
  const auto held_step = meta.find("step");
  if (held_step == meta.end()) return fmt::format("{}: has no step in its metadata", path);
  if (held_step->second != std::to_string(step)) {
    return fmt::format("{}: holds step {}, meta.json says step {}", path, held_step->second, step);
  }
  const auto held_stage = meta.find("stage");
  if (held_stage == meta.end() || held_stage->second != std::to_string(stage)) {
    return fmt::format("{}: holds stage {}, meta.json says stage {}", path,
                       held_stage == meta.end() ? "(none)" : held_stage->second, stage);
  }
  return std::nullopt;
}

// Why the shard's own metadata disagrees with meta.json `meta`, if it does: its step and stage
// first, then every other key it holds, which meta.json must hold with the same value.
std::optional<std::string> metadata_mismatch(const std::string& path,
                                             const std::map<std::string, std::string>& held,
                                             const nlohmann::json& meta, int stage) {
  if (auto mismatch = identity_mismatch(path, held, meta["step"].get<int64_t>(), stage)) {
    return mismatch;
  }
  for (const auto& [key, value] : held) {
    if (key == "step" || key == "stage") continue;
    const auto said = meta.find(key);
    if (said == meta.end()) {
      return fmt::format("{}: holds {} {}, meta.json has no {}", path, key, value, key);
    }
    const std::string said_text = said->is_string() ? said->get<std::string>() : said->dump();
    if (said_text != value) {
      return fmt::format("{}: holds {} {}, meta.json says {} {}", path, key, value, key, said_text);
    }
  }
  return std::nullopt;
}

// Why a shard does not match its record in meta.json. A shard copied from another step or
// stage is named as such when its header still reads; otherwise the size or the checksum.
std::string describe_mismatch(const std::string& path, const FileDigest& actual,
                              const ShardRecord& expected) {
  try {
    const auto mismatch =
        identity_mismatch(path, read_safetensors_metadata(path), expected.step, expected.stage);
    if (mismatch) return *mismatch;
  } catch (const InputError&) {
    // the header itself is damaged: the size or the checksum tells
  }
  if (actual.size != expected.digest.size) {
    return fmt::format("{}: size mismatch ({} bytes, meta.json says {})", path, actual.size,
                       expected.digest.size);
  }
  return fmt::format("{}: checksum mismatch (crc32 {}, meta.json says {})", path,
                     crc32_hex(actual.crc32), crc32_hex(expected.digest.crc32));
}

}  // namespace

std::string manifest_checksum(const nlohmann::json& meta) {
  nlohmann::json content = meta;
  content.erase(kManifestChecksumKey);
  const std::string text = content.dump();
  return crc32_hex(static_cast<uint32_t>(
      ::crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size()))));
}

const nlohmann::json& required_key(const nlohmann::json& meta, const std::string& path,
                                   const std::string& key) {
  const auto value = meta.find(key);
  check_input(value != meta.end(), "{}: missing key '{}'", path, key);
  return *value;
}

CheckpointStore::CheckpointStore(std::string run_dir, int keep)
    : run_dir_(std::move(run_dir)), keep_(keep) {
  check_input(keep_ >= 1, "checkpoint.keep: must be >= 1, got {}", keep_);
  seen_run_dir_ = run_dir_identity();
}

std::optional<CheckpointStore::DirectoryIdentity> CheckpointStore::run_dir_identity() const {
  struct stat info {};
  if (::stat(run_dir_.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return std::nullopt;
  return DirectoryIdentity{.device = static_cast<uint64_t>(info.st_dev),
                           .inode = static_cast<uint64_t>(info.st_ino)};
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

ShardRecord CheckpointStore::write_shard(int64_t step, int stage,
                                         const std::vector<TensorView>& tensors,
                                         const std::map<std::string, std::string>& metadata) {
  std::vector<TensorInfo> layout;
  for (const TensorView& tensor : tensors) layout.push_back({tensor.name, tensor.shape});
  return write_shard(
      step, stage, std::move(layout), [&tensors](size_t i) { return tensors[i].values; }, metadata);
}

ShardRecord CheckpointStore::write_shard(
    int64_t step, int stage, std::vector<TensorInfo> layout,
    const std::function<std::span<const float>(size_t)>& values,
    const std::map<std::string, std::string>& metadata) {
  prepare_step(step);
  std::map<std::string, std::string> shard_metadata = metadata;
  shard_metadata["step"] = std::to_string(step);
  shard_metadata["stage"] = std::to_string(stage);
  const size_t count = layout.size();
  SafetensorsWriter writer(shard_path(step, stage), std::move(layout), shard_metadata);
  for (size_t i = 0; i < count; ++i) writer.write(values(i));
  return {.stage = stage, .step = step, .digest = writer.commit()};
}

void CheckpointStore::prepare_step(int64_t step) {
  check(!seen_run_dir_ || run_dir_identity() == seen_run_dir_,
        "{}: the run directory was removed or replaced during the run, and the checkpoints it "
        "held on this disk with it",
        run_dir_);
  const std::string dir = step_dir(step);
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, "{}: cannot create checkpoint folder: {}", dir, ec.message());
  if (!seen_run_dir_) seen_run_dir_ = run_dir_identity();
  sync_directory(run_dir_);  // the entries of checkpoints/ and of the step folder
  sync_directory(checkpoints_dir());
  fs::remove(meta_path(step), ec);  // a step being rewritten is no longer committed
  check(!ec, "{}: cannot remove: {}", meta_path(step), ec.message());
}

void CheckpointStore::discard_shard(int64_t step, int stage) const {
  std::error_code ec;
  fs::remove(shard_path(step, stage), ec);
  fs::remove(step_dir(step), ec);  // only if nothing else is left in it
}

void CheckpointStore::commit(int64_t step, const nlohmann::json& meta,
                             const std::vector<ShardRecord>& shards) {
  write_commit(step, meta, shards);
  prune(step);
}

void CheckpointStore::write_commit(int64_t step, const nlohmann::json& meta,
                                   const std::vector<ShardRecord>& shards) {
  check(meta.is_object() && meta.contains("num_stages") && meta["num_stages"].is_number_integer() &&
            meta["num_stages"].get<int64_t>() >= 1,
        "checkpoint meta for step {} needs an integer num_stages >= 1", step);
  const int64_t num_stages = meta["num_stages"].get<int64_t>();
  std::vector<ShardRecord> sorted = shards;
  std::sort(sorted.begin(), sorted.end(),
            [](const ShardRecord& a, const ShardRecord& b) { return a.stage < b.stage; });
  check(static_cast<int64_t>(sorted.size()) == num_stages,
        "{}: cannot commit step {}: {} of {} shards reported written", step_dir(step), step,
        sorted.size(), num_stages);
  nlohmann::json records = nlohmann::json::array();
  for (size_t i = 0; i < sorted.size(); ++i) {
    check(sorted[i].stage == static_cast<int>(i) && sorted[i].step == step,
          "{}: cannot commit step {}: no report for stage {}", step_dir(step), step, i);
    records.push_back(shard_json(sorted[i]));
  }
  nlohmann::json full = meta;
  full["step"] = step;
  full["shards"] = std::move(records);
  if (!full.contains("time")) full["time"] = utc_now();
  full[kManifestChecksumKey] = manifest_checksum(full);
  std::error_code ec;
  fs::create_directories(step_dir(step), ec);  // rank 0's own disk may not have it yet
  check(!ec, "{}: cannot create checkpoint folder: {}", step_dir(step), ec.message());
  write_file_atomically(meta_path(step), full.dump(2) + "\n");
}

void CheckpointStore::prune(int64_t committed_step) const {
  try {
    remove_old(committed_step);
  } catch (const Error& e) {  // the commit stands; old checkpoints merely stay
    spdlog::warn("{}", e.what());
  }
}

void CheckpointStore::uncommit(int64_t step) const {
  std::error_code ec;
  fs::remove(meta_path(step), ec);
}

std::vector<int> CheckpointStore::intact_shards(int64_t step, const nlohmann::json& meta) const {
  std::vector<int> stages;
  for (const ShardRecord& record : parse_shards(meta, meta_path(step), step)) {
    const std::string path = shard_path(step, record.stage);
    if (fs::is_regular_file(path) && digest_file(path) == record.digest) {
      stages.push_back(record.stage);
    }
  }
  return stages;
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
    if (fs::is_regular_file(meta_path(step))) committed.push_back(step);
  }
  return committed;
}

std::optional<int64_t> CheckpointStore::latest_committed() const {
  const std::vector<int64_t> committed = committed_steps();
  if (committed.empty()) return std::nullopt;
  return committed.back();
}

void CheckpointStore::remove_old(int64_t committed_step) const {
  const std::vector<int64_t> committed = committed_steps();
  const size_t num_old = committed.size() > static_cast<size_t>(keep_)
                             ? committed.size() - static_cast<size_t>(keep_)
                             : 0;
  std::vector<int64_t> doomed(committed.begin(), committed.begin() + static_cast<long>(num_old));
  for (int64_t step : step_folders()) {
    if (step < committed_step && !fs::is_regular_file(meta_path(step))) doomed.push_back(step);
  }
  for (int64_t step : doomed) {
    std::error_code ec;
    // meta.json goes first, so a folder that cannot be removed completely reads as incomplete.
    fs::remove(meta_path(step), ec);
    fs::remove_all(step_dir(step), ec);
    if (ec) spdlog::warn("{}: cannot remove old checkpoint: {}", step_dir(step), ec.message());
  }
}

nlohmann::json CheckpointStore::read_meta(int64_t step, CheckpointUse use) const {
  try {
    return read_checked_meta(step);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}; {}", e.what(), intact_hint(step, use)));
  }
}

nlohmann::json CheckpointStore::read_checked_meta(int64_t step) const {
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
  for (const char* key : kRequiredMetaKeys) required_key(meta, path, key);
  const nlohmann::json& recorded = meta[kManifestChecksumKey];
  const std::string actual = manifest_checksum(meta);
  check_input(recorded == actual, "{}: manifest checksum mismatch (crc32 {}, {} says {})", path,
              actual, kManifestChecksumKey,
              recorded.is_string() ? recorded.get<std::string>() : recorded.dump());
  const nlohmann::json& num_stages = meta["num_stages"];
  check_input(num_stages.is_number_integer() && num_stages.get<int64_t>() >= 1,
              "{}: num_stages must be an integer >= 1", path);
  const nlohmann::json& stored_step = meta["step"];
  check_input(stored_step.is_number_integer() && stored_step.get<int64_t>() == step,
              "{}: step must be {} (the folder's step)", path, step);
  parse_shards(meta, path, step);  // validates the list
  return meta;
}

void CheckpointStore::check_shard(const ShardRecord& expected, const nlohmann::json& meta) const {
  const std::string path = shard_path(expected.step, expected.stage);
  check_input(fs::exists(path), "{}: missing (meta.json says {} stages)", path,
              meta["num_stages"].get<int64_t>());
  const FileDigest actual = digest_file(path);
  if (actual != expected.digest) throw InputError(describe_mismatch(path, actual, expected));
  if (auto mismatch =
          metadata_mismatch(path, read_safetensors_metadata(path), meta, expected.stage)) {
    throw InputError(*mismatch);
  }
}

void CheckpointStore::read_verified(int64_t step, const TensorDestination& destination) const {
  const nlohmann::json meta = read_checked_meta(step);
  const int64_t num_stages = meta["num_stages"].get<int64_t>();
  for (const ShardRecord& record : parse_shards(meta, meta_path(step), step)) {
    check_shard(record, meta);
  }
  std::unordered_map<std::string, int64_t> stage_of;
  for (int64_t stage = 0; stage < num_stages; ++stage) {
    const std::string path = shard_path(step, static_cast<int>(stage));
    read_safetensors_into(path, [&](const std::string& name, const Shape& shape) {
      const auto [it, inserted] = stage_of.emplace(name, stage);
      check_input(inserted, "{}: tensor '{}' is also in stage_{}.safetensors", path, name,
                  it->second);
      return destination(name, shape);
    });
  }
}

void CheckpointStore::read_into(int64_t step, const TensorDestination& destination,
                                CheckpointUse use) const {
  // What the destination refuses (a tensor of another shape) is no fault of the checkpoint:
  // it passes through without the hint.
  struct Refused {
    std::exception_ptr error;
  };
  const auto guarded = [&destination](const std::string& name, const Shape& shape) {
    try {
      return destination(name, shape);
    } catch (...) {
      throw Refused{std::current_exception()};
    }
  };
  try {
    read_verified(step, guarded);
  } catch (const Refused& refused) {
    std::rethrow_exception(refused.error);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}; {}", e.what(), intact_hint(step, use)));
  }
}

std::vector<NamedTensor> CheckpointStore::read_all(int64_t step) const {
  std::vector<NamedTensor> merged;
  read_into(step, [&merged](const std::string& name, const Shape& shape) {
    NamedTensor& t = merged.emplace_back();
    t.name = name;
    t.shape = shape;
    t.values.resize(static_cast<size_t>(shape.numel()));
    return std::optional<std::span<float>>(t.values);
  });
  return merged;
}

void CheckpointStore::verify(int64_t step) const {
  std::vector<float> scratch;  // each tensor in turn, for the reader's finite check
  read_verified(step, [&scratch](const std::string&, const Shape& shape) {
    scratch.resize(static_cast<size_t>(shape.numel()));
    return std::optional<std::span<float>>(scratch);
  });
}

std::string CheckpointStore::intact_hint(int64_t broken_step, CheckpointUse use) const {
  const std::vector<int64_t> committed = committed_steps();
  for (auto it = committed.rbegin(); it != committed.rend(); ++it) {
    if (*it >= broken_step) continue;
    try {
      verify(*it);
    } catch (const InputError&) {
      continue;
    }
    std::vector<std::string> newer;
    for (int64_t step : committed) {
      if (step > *it) newer.push_back(fs::path(step_dir(step)).filename().string());
    }
    if (std::find(committed.begin(), committed.end(), broken_step) == committed.end()) {
      newer.push_back(fs::path(step_dir(broken_step)).filename().string());
    }
    const std::string advice =
        use == CheckpointUse::kExport
            ? fmt::format("export it with --step {}", *it)
            : fmt::format("remove {} to resume from it", fmt::join(newer, ", "));
    return fmt::format("the newest intact checkpoint is step {} ({}): {}", *it, step_dir(*it),
                       advice);
  }
  return "no earlier committed checkpoint is intact";
}

}  // namespace mpipe::checkpoint
