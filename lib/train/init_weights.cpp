// Matching a weights file against the model, and loading a stage's share of it.
#include "train/init_weights.h"

#include <algorithm>
#include <map>

#include "checkpoint/safetensors.h"
#include "core/error.h"
#include "train/stage_tensors.h"

namespace mpipe::train {

bool keeps_initialisation(const std::string& name, const std::vector<std::string>& skip) {
  for (const std::string& pattern : skip) {
    if (!name.starts_with(pattern)) continue;
    if (name.size() == pattern.size() || pattern.back() == '.' || name[pattern.size()] == '.') {
      return true;
    }
  }
  return false;
}

void check_init_weights(const std::vector<std::unique_ptr<nn::Layer>>& layers,
                        const InitWeights& init, const std::optional<model::TiedWeights>& tied) {
  const std::vector<WeightSlot> model = weight_layout(layers, tied);
  for (const std::string& pattern : init.skip) {
    const bool matches = std::any_of(model.begin(), model.end(), [&](const WeightSlot& slot) {
      return keeps_initialisation(slot.tensor.name, {pattern});
    });
    check_input(matches, "--init-skip '{}': matches no tensor of the model", pattern);
  }
  std::map<std::string, Shape> in_file;
  for (const checkpoint::TensorInfo& tensor : checkpoint::read_safetensors_layout(init.path)) {
    in_file.emplace(tensor.name, tensor.shape);
  }
  for (const WeightSlot& slot : model) {
    const checkpoint::TensorInfo& wanted = slot.tensor;
    if (keeps_initialisation(wanted.name, init.skip)) continue;
    const auto found = in_file.find(wanted.name);
    check_input(found != in_file.end(), "{}: tensor {} is missing", init.path, wanted.name);
    check_input(found->second == wanted.shape, "{}: tensor {} has shape {}, the model needs {}",
                init.path, wanted.name, found->second, wanted.shape);
    in_file.erase(found);
  }
  for (const auto& [name, shape] : in_file) {
    check_input(keeps_initialisation(name, init.skip), "{}: tensor {} is not in the model",
                init.path, name);
  }
}

void load_init_weights(pipeline::Stage& stage, const InitWeights& init,
                       const std::optional<model::TiedWeights>& tied) {
  load_stage_weights(
      stage,
      [&init](const checkpoint::TensorDestination& into) {
        checkpoint::read_safetensors_into(init.path, into);
      },
      init.path, [&init](const std::string& name) { return keeps_initialisation(name, init.skip); },
      tied);
}

}  // namespace mpipe::train
