// A run's stored settings turned back into --set overrides over its experiment file, so that a
// resume needs neither the command line the run started with nor a file left as it was.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/layer_spec.h"
#include "optim/optimizer_config.h"

namespace mpipe::config {

// What resume_overrides gives back.
struct SettingsRestore {
  // "key=value" overrides, in key order, to apply before the command line's own.
  std::vector<std::string> overrides;
  // One entry per setting they restore, where the file differs: "train.steps: 4 (file: 10)",
  // "model.layers[3].units: 48 (file: (none))".
  std::vector<std::string> restored;
};

// The overrides that give the experiment whose resolved settings are `file` (the experiment file
// with this command line's `command_line` overrides) the settings `stored` a run's checkpoint
// was saved with (resolved_settings of its experiment). Left out: settings the command line sets
// (it changes them; the resume then checks the change), and settings only one side has outside
// model.* (a setting one mpipe version has and the other lacks). The model is restored whole:
// when any model.layers[i] key differs, `model.layers` is set to the stored layers. A run
// stored before optimizer.schedule.total_steps existed had its schedule end at its train.steps,
// so that length is kept too. Each value is written so that it reads back as the stored text.
SettingsRestore resume_overrides(std::map<std::string, std::string> stored,
                                 const std::map<std::string, std::string>& file,
                                 const std::vector<std::string>& command_line);

// The model and optimizer of the experiment whose resolved settings are `stored` (a run's
// checkpoint's), read as load_experiment reads an experiment file's model: and optimizer:
// sections, for a command that has the run directory alone (mpipe export). Throws InputError
// naming `source` (meta.json) and the key: "meta.json:1: optimizer.kind: ..." (the line is the
// value's own, each setting being parsed alone).
struct StoredModel {
  model::ModelSpec model;
  optim::OptimizerConfig optimizer;
};
StoredModel stored_model(const std::map<std::string, std::string>& stored,
                         const std::string& source);

}  // namespace mpipe::config
