// Starting a run from a weights file (`mpipe train --init-weights W --init-skip NAME`): the file
// is matched against the model at preflight, then each stage takes its own tensors from it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/tied_weights.h"
#include "nn/layer.h"
#include "pipeline/stage.h"

namespace mpipe::train {

// The weights file and the tensors that keep their initialisation.
struct InitWeights {
  std::string path;  // empty: none (the run starts from its own initialisation)
  // Tensor names, or prefixes that end where a name's part does ("layers.5" leaves
  // layers.5.weight and layers.5.bias, not layers.50.weight): these keep their initialisation,
  // and the file may lack them or hold them with another shape.
  std::vector<std::string> skip;
};

// Whether `skip` leaves the tensor `name` at its initialisation.
bool keeps_initialisation(const std::string& name, const std::vector<std::string>& skip);

// Preflight: reads only the file's header and checks it against the whole model's weights
// (`layers`: every layer of the model). Throws InputError with one line naming the file and the
// tensor: "w.safetensors: tensor layers.5.weight has shape [3, 48], the model needs [4, 48]",
// "... tensor layers.4.bias is missing", "... tensor layers.9.weight is not in the model", a
// dtype other than F32 (from the header's check), or "--init-skip 'layers.9': matches no tensor
// of the model". A tied matrix (`tied`) is one tensor, the embedding's (train/stage_tensors.h).
void check_init_weights(const std::vector<std::unique_ptr<nn::Layer>>& layers,
                        const InitWeights& init, const std::optional<model::TiedWeights>& tied);

// Reads the stage's own tensors from the file straight into its weights (every other tensor is
// skipped), refusing a non-finite value as any weights read are refused; a tied head's copy comes
// from the embedding's tensor.
void load_init_weights(pipeline::Stage& stage, const InitWeights& init,
                       const std::optional<model::TiedWeights>& tied);

}  // namespace mpipe::train
