// Streaming a committed checkpoint's weights, shard by shard, into one weights file.
#include "checkpoint/checkpoint_export.h"

#include <fmt/ranges.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <utility>
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

// `out` can be written: a new file or a regular one it replaces (not a folder, nor a device such
// as /dev/null, which the rename into place would replace with a file), in a folder that exists.
void check_output(const std::string& out) {
  const fs::path file(out);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  check_input(!fs::is_directory(status), "{}: is a directory, not a file", out);
  check_input(!fs::exists(status) || fs::is_regular_file(status),
              "{}: exists and is not a regular file (export writes a new file or replaces a "
              "regular one)",
              out);
  check_input(fs::is_directory(folder, ec), "{}: the folder {} does not exist", out,
              folder.string());
}

// The weight whose optimizer state `name` is ("optim.<slot>.<weight>"), or nullopt for a name of
// another form.
std::optional<std::string> weight_of_state(std::string_view name) {
  constexpr std::string_view kStatePrefix = "optim.";
  if (!name.starts_with(kStatePrefix)) return std::nullopt;
  const size_t dot = name.find('.', kStatePrefix.size());
  if (dot == std::string_view::npos) return std::nullopt;
  return std::string(name.substr(dot + 1));
}

// The weights of the step's shards, in the order of their data (stage by stage: per layer its
// parameters, then its buffers), which is the order the end-of-run export writes them in. From the
// headers, before any value is read, as a resume would refuse them: a tensor in two shards, and
// tensors that disagree with their optimizer state (a state whose weight is missing, or of
// another shape: a weight renamed or reshaped). `all` gets every tensor's name and shape.
std::vector<TensorInfo> weights_layout(const CheckpointStore& store, int64_t step,
                                       int64_t num_stages, std::vector<TensorInfo>& all) {
  std::vector<TensorInfo> layout;
  std::map<std::string, std::pair<int, Shape>> weights;  // name -> stage, shape
  std::vector<std::pair<int, TensorInfo>> states;
  std::map<std::string, int> stage_of;
  for (int stage = 0; stage < num_stages; ++stage) {
    const std::string path = store.shard_path(step, stage);
    for (TensorInfo& tensor : read_safetensors_layout(path)) {
      const auto [it, inserted] = stage_of.emplace(tensor.name, stage);
      check_input(inserted, "{}: tensor '{}' is also in stage_{}.safetensors", path, tensor.name,
                  it->second);
      all.push_back(tensor);
      if (!is_weight_name(tensor.name)) {
        states.emplace_back(stage, std::move(tensor));
        continue;
      }
      weights[tensor.name] = {stage, tensor.shape};
      layout.push_back(std::move(tensor));
    }
  }
  for (const auto& [stage, state] : states) {
    const std::string path = store.shard_path(step, stage);
    const std::optional<std::string> weight = weight_of_state(state.name);
    if (!weight || !is_weight_name(*weight)) continue;
    const auto found = weights.find(*weight);
    check_input(found != weights.end(),
                "{}: tensor '{}' is the optimizer state of '{}', which no shard holds", path,
                state.name, *weight);
    check_input(found->second.second == state.shape,
                "{}: tensor '{}' has shape {}, its optimizer state '{}' (in {}) has {}",
                store.shard_path(step, found->second.first), *weight, found->second.second,
                state.name, fs::path(path).filename().string(), state.shape);
  }
  return layout;
}

// meta.json's "settings" (`meta_path`'s), which must be an object of strings.
std::map<std::string, std::string> recorded_settings(const nlohmann::json& meta,
                                                     const std::string& meta_path) {
  const nlohmann::json& settings = required_key(meta, meta_path, "settings");
  std::map<std::string, std::string> result;
  check_input(settings.is_object(), "{}: settings: must be an object of strings", meta_path);
  for (const auto& [key, value] : settings.items()) {
    check_input(value.is_string(), "{}: settings.{}: must be a string", meta_path, key);
    result[key] = value.get<std::string>();
  }
  return result;
}

}  // namespace

CheckpointExport export_checkpoint(const std::string& run_dir, std::optional<int64_t> step,
                                   const std::string& out, const ModelCheck& check_model) {
  const CheckpointStore store(run_dir, 1);
  CheckpointExport result{.step = pick_step(store, step), .num_tensors = 0, .digest = {}};
  check_output(out);
  const nlohmann::json meta = store.read_meta(result.step, CheckpointUse::kExport);
  const std::string meta_path = store.meta_path(result.step);
  // What is wrong with the checkpoint beyond what read_meta and read_into check (and hint at) is
  // refused with the same hint: the newest intact checkpoint, to export instead.
  const auto with_hint = [&](const InputError& e) {
    return InputError(
        fmt::format("{}; {}", e.what(), store.intact_hint(result.step, CheckpointUse::kExport)));
  };
  std::optional<SafetensorsWriter> writer;
  try {
    const nlohmann::json& config = required_key(meta, meta_path, "config");
    check_input(config.is_string(), "{}: config must be a string", meta_path);
    CheckpointTensors checkpoint{.meta = meta,
                                 .meta_path = meta_path,
                                 .step_dir = store.step_dir(result.step),
                                 .settings = recorded_settings(meta, meta_path),
                                 .tensors = {}};
    std::vector<TensorInfo> layout =
        weights_layout(store, result.step, meta["num_stages"].get<int64_t>(), checkpoint.tensors);
    check_model(checkpoint);
    result.num_tensors = static_cast<int64_t>(layout.size());
    writer.emplace(out, std::move(layout),
                   weights_file_metadata(config.get<std::string>(), checkpoint.settings,
                                         tied_names_in_settings(checkpoint.settings)));
  } catch (const InputError& e) {
    throw with_hint(e);
  }
  // The reader checks a tensor (finite) after it hands out its span: a tensor is written once
  // the next one is asked for, the last after the read, and the file appears only on commit.
  // The optimizer state is read too, into scratch, so that a non-finite value anywhere is
  // refused as a resume refuses it.
  std::vector<float> pending, scratch;
  bool has_pending = false;
  const auto write_pending = [&] {
    if (has_pending) writer->write(pending);
    has_pending = false;
  };
  const auto take_tensor = [&](const std::string& name, const Shape& shape) {
    if (!is_weight_name(name)) {
      scratch.resize(static_cast<size_t>(shape.numel()));
      return std::optional<std::span<float>>(scratch);
    }
    write_pending();
    check(writer->next().name == name && writer->next().shape == shape,
          "{}: tensor '{}' {} read where the header listed '{}' {}", store.step_dir(result.step),
          name, shape, writer->next().name, writer->next().shape);
    pending.assign(static_cast<size_t>(shape.numel()), 0.0f);
    has_pending = true;
    return std::optional<std::span<float>>(pending);
  };
  store.read_into(result.step, take_tensor, CheckpointUse::kExport);
  write_pending();
  result.digest = writer->commit();
  return result;
}

}  // namespace mpipe::checkpoint
