// Resolved settings: an experiment as a flat map of key path -> value text, defaults included,
// for recording in a checkpoint and comparing on resume.
#pragma once

#include <map>
#include <string>

#include "config/experiment.h"

namespace mpipe::config {

// Every setting of `experiment` after defaults, one entry per key, with the value as it would
// be written in YAML: "optimizer.lr" -> "0.001", "optimizer.kind" -> "adam",
// "pipeline.stages" -> "auto", "pipeline.partition" -> "[2, 2]", "model.layers[2].type" ->
// "linear", "model.layers[2].units" -> "256". Layer attributes are those the file gives (the
// model builder's defaults for the others are not known here). Passing any entry back as
// `--set key=value` leaves the experiment unchanged.
std::map<std::string, std::string> resolved_settings(const Experiment& experiment);

}  // namespace mpipe::config
