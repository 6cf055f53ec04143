// The decay-exempt ranges of a stage, from its parameters' shapes and its layers' kinds.
#include "train/decay_exemption.h"

#include <map>
#include <string_view>

namespace mpipe::train {

std::vector<optim::ParamRange> decay_exempt_ranges(const pipeline::Stage& stage) {
  std::map<int, std::string_view> kind_of;  // global layer index -> layer kind
  for (const auto& layer : stage.layers()) kind_of[layer->global_index()] = layer->kind();
  std::vector<optim::ParamRange> exempt;
  for (const auto& entry : stage.params().entries()) {
    if (!entry.trainable) continue;
    if (entry.shape.rank() < 2 || kind_of.at(entry.global_layer) == "embedding") {
      exempt.push_back({entry.offset, entry.offset + entry.shape.numel()});
    }
  }
  return exempt;
}

}  // namespace mpipe::train
