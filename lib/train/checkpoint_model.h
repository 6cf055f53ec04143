// The model a checkpoint was saved with, from its manifest alone: the data inputs it records, and
// the check that the checkpoint's tensors are that model's (what a resume checks), for export.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint/checkpoint_export.h"
#include "model/model_builder.h"

namespace mpipe::train {

// The model's data inputs as meta.json records them: [{"name": "input", "shape": [784]}, ...]
// (the model's shapes depend on them, and a command without the data reads them here).
nlohmann::json inputs_record(const model::ModelInputs& inputs);

// Rebuilds the model and optimizer of the manifest's settings and inputs and checks the
// checkpoint's tensors as a resume checks them (NeededTensors): every weight and optimizer state
// the model needs is there with its shape. Throws InputError naming meta.json for settings or
// inputs that build no model, else naming the step folder: "DIR: tensor layers.3.weight is
// missing".
void check_checkpoint_model(const checkpoint::CheckpointTensors& checkpoint);

}  // namespace mpipe::train
