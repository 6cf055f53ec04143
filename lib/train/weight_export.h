// Weight export: every stage's weights into one safetensors file whose tensor names
// ("layers.<global layer>.<name>") do not depend on the number of stages.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "config/experiment.h"
#include "data/dataset.h"
#include "train/trainer.h"

namespace mpipe::train {

// What world rank 0 is given of the model's weights: first the layout of every tensor, in global
// layer order (as a weights file holds them: a tied matrix once, under the embedding's name),
// then each tensor's values in that order. Neither may throw: the senders would wait for rank 0
// forever (keep a failure and act on it after).
using WeightLayoutSink = std::function<void(const std::vector<checkpoint::TensorInfo>& layout)>;
using WeightSink =
    std::function<void(const checkpoint::TensorInfo& tensor, std::span<const float> values)>;

// Collective over the world: the first replica's ranks send their weights, one tensor at a time,
// to world rank 0, which hands them to `begin` and `sink` as they arrive; no rank holds more than
// its own stages plus one tensor. The other replicas take no part.
void stream_weights(Trainer& trainer, const config::Experiment& experiment,
                    const data::Dataset& dataset, const WeightLayoutSink& begin,
                    const WeightSink& sink);

// Collective over the world: the first replica's stages stream their weights, one tensor at a
// time, to world rank 0, which writes `path` atomically as they arrive; no rank ever holds more
// than its own stages plus one tensor. Refuses non-finite weights. Throws AgreedError on every
// rank when the file could not be written.
void export_weights(Trainer& trainer, const config::Experiment& experiment,
                    const data::Dataset& dataset, const std::string& path);

}  // namespace mpipe::train
