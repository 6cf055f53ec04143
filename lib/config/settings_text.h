// Resolved settings as one text ("key.path: value" lines), for comparing the configs of ranks at
// start-up and saying which key differs.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace mpipe::config {

// One "key: value" line per entry, in key order (newlines in values written as "\n").
std::string settings_text(const std::map<std::string, std::string>& settings);

// Nothing when `mine` and `theirs` (settings_text texts) hold the same keys and values; else
// the keys that differ, in key order, the first three named and the rest counted, joined by "; ":
// "train.steps is 7 here, 3 on rank 0", "model.layers[3].units is 8 here, not set on rank 0",
// "model.layers[3].type is not set here, relu on rank 0", "...; and 2 more" (`them` names the
// other side).
std::optional<std::string> describe_settings_difference(const std::string& mine,
                                                        const std::string& theirs,
                                                        const std::string& them);

}  // namespace mpipe::config
