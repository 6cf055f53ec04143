// What makes a safetensors file an mpipe weights file: its tensors' names and its metadata, shared
// by the end-of-run export and the export of a checkpoint, so both write the same bytes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpipe::checkpoint {

// A weight's name starts with this ("layers.<global layer>.<param or buffer>"); a checkpoint's
// other tensors (optimizer state: "optim.<slot>.layers...") do not.
inline constexpr std::string_view kWeightPrefix = "layers.";

inline bool is_weight_name(std::string_view name) { return name.starts_with(kWeightPrefix); }

// A tied matrix as a weights file names it: the tensors left out (the copies: a later
// embedding's "layers.3.token", the output layer's "layers.5.weight") and the one that holds it
// ("layers.0.token"); docs/config.md, tied embeddings.
struct TiedNames {
  std::vector<std::string> copies;
  std::string stored;
};

// The metadata of a weights file of the run configured by `config_source` (the experiment file)
// whose resolved settings are `settings` (config::resolved_settings; a checkpoint's meta.json
// "settings"): "model" holds the model's settings, the entries whose key starts with "model.", as
// a JSON object of strings ({"model.loss": "cross_entropy", "model.layers[0].type": "embedding",
// "model.layers[0].vocab": "64", ...}: the layers with every `repeat` expanded, each value as
// YAML writes it), from which the model is built without the experiment file
// (config::stored_model, scripts/pytorch/mpipe_model.py); with a tie, "tied_weights" says which
// tensor to load from which: {"layers.3.token": "layers.0.token", "layers.5.weight":
// "layers.0.token"}.
std::map<std::string, std::string> weights_file_metadata(
    const std::string& config_source, const std::map<std::string, std::string>& settings,
    const std::optional<TiedNames>& tied);

// The tie of a run from its resolved settings (a checkpoint's meta.json `settings`): the layers
// with `model.layers[i].tie: embedding` (an embedding's "token", a linear's "weight") and the
// first `model.layers[e].type: embedding`.
std::optional<TiedNames> tied_names_in_settings(const std::map<std::string, std::string>& settings);

// The model's settings that a weights file's `metadata` holds ("model", as weights_file_metadata
// writes it), for config::stored_model; nullopt for a file without them (an export written before
// mpipe recorded its model). Throws InputError naming `path` when "model" is not a JSON object of
// strings.
std::optional<std::map<std::string, std::string>> model_settings_in_metadata(
    const std::map<std::string, std::string>& metadata, const std::string& path);

}  // namespace mpipe::checkpoint
