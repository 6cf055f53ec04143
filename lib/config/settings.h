// The settings of an experiment as text ("key.path: value" lines), for comparing the configs of
// ranks at start-up and saying which key differs.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

namespace mpipe::config {

// Every value below `tree`, one "key.path: value" line each, sorted by key:
// "model.layers[0].units: 64\ntrain.steps: 3\n". Newlines in values are written as "\n".
std::string flatten_settings(const YAML::Node& tree);

// Nothing when `mine` and `theirs` (flatten_settings texts) hold the same keys and values; else
// the first key, in key order, that differs: "train.steps is 7 here, 3 on rank 0",
// "optimizer.clip_norm is 0.5 here, not set on rank 0", "log.every is not set here, 1 on rank 0".
std::optional<std::string> describe_settings_difference(const std::string& mine,
                                                        const std::string& theirs,
                                                        const std::string& them);

}  // namespace mpipe::config
