// Weight export: gathers every stage's weights into one safetensors file whose tensor names
// ("layers.<global layer>.<name>") do not depend on the number of stages.
#pragma once

#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "config/experiment.h"
#include "data/dataset.h"
#include "train/trainer.h"

namespace mpipe::train {

// Collective over the world: the first replica's stages send their weights to world rank 0,
// which writes `path` atomically. Returns the weights on world rank 0, nothing elsewhere.
std::vector<checkpoint::NamedTensor> export_weights(Trainer& trainer,
                                                    const config::Experiment& experiment,
                                                    const data::Dataset& dataset,
                                                    const std::string& path);

}  // namespace mpipe::train
