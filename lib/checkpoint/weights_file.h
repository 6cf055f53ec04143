// What makes a safetensors file an mpipe weights file: its tensors' names and its metadata, shared
// by the end-of-run export and the export of a checkpoint, so both write the same bytes.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace mpipe::checkpoint {

// A weight's name starts with this ("layers.<global layer>.<param or buffer>"); a checkpoint's
// other tensors (optimizer state: "optim.<slot>.layers...") do not.
inline constexpr std::string_view kWeightPrefix = "layers.";

inline bool is_weight_name(std::string_view name) { return name.starts_with(kWeightPrefix); }

// The metadata of a weights file of the run configured by `config_source` (the experiment file).
inline std::map<std::string, std::string> weights_file_metadata(const std::string& config_source) {
  return {{"format", "pt"}, {"producer", "mpipe"}, {"config", config_source}};
}

}  // namespace mpipe::checkpoint
