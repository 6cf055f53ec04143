// The decay-exempt ranges of a stage, from its parameters' shapes and its layers' kinds.
#include "train/decay_exemption.h"

#include <map>
#include <string_view>

namespace mpipe::train {

std::vector<optim::ParamRange> decay_exempt_ranges(const pipeline::Stage& stage,
                                                   const std::optional<model::TiedWeights>& tied) {
  std::map<int, std::string_view> kind_of;  // global layer index -> layer kind
  for (const auto& layer : stage.layers()) kind_of[layer->global_index()] = layer->kind();
  std::vector<optim::ParamRange> exempt;
  for (const auto& entry : stage.params().entries()) {
    if (!entry.trainable) continue;
    // A tied head's weight is the embedding's matrix, so it is exempt with it: the copies must
    // take the same steps.
    const bool tied_copy = tied && tied->is_copy(entry.global_layer, entry.name);
    if (entry.shape.rank() < 2 || kind_of.at(entry.global_layer) == "embedding" || tied_copy) {
      exempt.push_back({entry.offset, entry.offset + entry.shape.numel()});
    }
  }
  return exempt;
}

}  // namespace mpipe::train
