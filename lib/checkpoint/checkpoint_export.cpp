// Streaming a committed checkpoint's weights, shard by shard, into one weights file.
#include "checkpoint/checkpoint_export.h"

#include <fmt/ranges.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/weights_file.h"
#include "core/error.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

// The step to export: `wanted`, which must be committed, or the newest committed one.
int64_t pick_step(const CheckpointStore& store, std::optional<int64_t> wanted) {
  const std::string& run_dir = store.run_dir();
  std::error_code ec;
  check_input(fs::is_directory(run_dir, ec), "{}: not a run directory ({})", run_dir,
              fs::exists(run_dir, ec) ? "not a directory" : "it does not exist");
  check_input(fs::is_directory(store.checkpoints_dir(), ec),
              "{}: no committed checkpoint (it has no checkpoints/ folder)", run_dir);
  const std::vector<int64_t> committed = store.committed_steps();
  check_input(!committed.empty(),
              "{}: no committed checkpoint (checkpoints/ holds no committed step)", run_dir);
  if (!wanted) return committed.back();
  check_input(std::find(committed.begin(), committed.end(), *wanted) != committed.end(),
              "{}: no committed checkpoint at step {} (committed: {})", run_dir, *wanted,
              fmt::join(committed, ", "));
  return *wanted;
}

// `out` can be written: a file (not a folder) in a folder that exists.
void check_output(const std::string& out) {
  const fs::path file(out);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code ec;
  check_input(!fs::is_directory(file, ec), "{}: is a directory, not a file", out);
  check_input(fs::is_directory(folder, ec), "{}: the folder {} does not exist", out,
              folder.string());
}

// The weights of the step's shards, in the order of their data (stage by stage: per layer its
// parameters, then its buffers), which is the order the end-of-run export writes them in.
std::vector<TensorInfo> weights_layout(const CheckpointStore& store, int64_t step,
                                       int64_t num_stages) {
  std::vector<TensorInfo> layout;
  for (int stage = 0; stage < num_stages; ++stage) {
    for (TensorInfo& tensor : read_safetensors_layout(store.shard_path(step, stage))) {
      if (is_weight_name(tensor.name)) layout.push_back(std::move(tensor));
    }
  }
  return layout;
}

}  // namespace

CheckpointExport export_checkpoint(const std::string& run_dir, std::optional<int64_t> step,
                                   const std::string& out) {
  const CheckpointStore store(run_dir, 1);
  CheckpointExport result{.step = pick_step(store, step), .num_tensors = 0, .digest = {}};
  check_output(out);
  const nlohmann::json meta = store.read_meta(result.step, CheckpointUse::kExport);
  const nlohmann::json& config = required_key(meta, store.meta_path(result.step), "config");
  check_input(config.is_string(), "{}: config must be a string", store.meta_path(result.step));

  std::vector<TensorInfo> layout =
      weights_layout(store, result.step, meta["num_stages"].get<int64_t>());
  result.num_tensors = static_cast<int64_t>(layout.size());
  const nlohmann::json& settings = required_key(meta, store.meta_path(result.step), "settings");
  SafetensorsWriter writer(
      out, std::move(layout),
      weights_file_metadata(
          config.get<std::string>(),
          tied_names_in_settings(settings.get<std::map<std::string, std::string>>())));
  // The reader checks a tensor (finite) after it hands out its span: a tensor is written once
  // the next one is asked for, the last after the read, and the file appears only on commit.
  // The optimizer state is read too, into scratch, so that a non-finite value anywhere is
  // refused as a resume refuses it.
  std::vector<float> pending, scratch;
  bool has_pending = false;
  const auto write_pending = [&] {
    if (has_pending) writer.write(pending);
    has_pending = false;
  };
  const auto take_tensor = [&](const std::string& name, const Shape& shape) {
    if (!is_weight_name(name)) {
      scratch.resize(static_cast<size_t>(shape.numel()));
      return std::optional<std::span<float>>(scratch);
    }
    write_pending();
    check(writer.next().name == name && writer.next().shape == shape,
          "{}: tensor '{}' {} read where the header listed '{}' {}", store.step_dir(result.step),
          name, shape, writer.next().name, writer.next().shape);
    pending.assign(static_cast<size_t>(shape.numel()), 0.0f);
    has_pending = true;
    return std::optional<std::span<float>>(pending);
  };
  store.read_into(result.step, take_tensor, CheckpointUse::kExport);
  write_pending();
  result.digest = writer.commit();
  return result;
}

}  // namespace mpipe::checkpoint
