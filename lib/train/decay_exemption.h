// optimizer.decay_exempt: the parameters of a stage that weight decay leaves alone.
#pragma once

#include <optional>
#include <vector>

#include "model/tied_weights.h"
#include "optim/optimizer.h"
#include "pipeline/stage.h"

namespace mpipe::train {

// Where the stage's exempt parameters lie in its flat parameter buffer: every parameter of rank
// < 2 (biases, norm gains and shifts) and every table of an embedding layer. The rule reads
// only each tensor's shape and its layer's kind, so it exempts the same tensors on every K. A
// tied head's weight (`tied`) is the embedding's table, and exempt with it.
std::vector<optim::ParamRange> decay_exempt_ranges(const pipeline::Stage& stage,
                                                   const std::optional<model::TiedWeights>& tied);

}  // namespace mpipe::train
