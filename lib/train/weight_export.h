// Weight export: every stage's weights into one safetensors file whose tensor names
// ("layers.<global layer>.<name>") do not depend on the number of stages.
#pragma once

#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "config/experiment.h"
#include "data/dataset.h"
#include "train/trainer.h"

namespace mpipe::train {

// Collective over the world: the first replica's stages stream their weights, one tensor at a
// time, to world rank 0, which writes `path` atomically as they arrive; no rank ever holds more
// than its own stages plus one tensor. Refuses non-finite weights. Throws AgreedError on every
// rank when the file could not be written.
void export_weights(Trainer& trainer, const config::Experiment& experiment,
                    const data::Dataset& dataset, const std::string& path);

}  // namespace mpipe::train
