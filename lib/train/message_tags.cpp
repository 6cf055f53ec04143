// An experiment's TagSpace, and its check against the MPI library's tag bound.
#include "train/message_tags.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "model/model_builder.h"
#include "model/tied_weights.h"
#include "pipeline/link.h"
#include "train/stage_tensors.h"

namespace mpipe::train {

comm::TagSpace message_tags(const config::Experiment& experiment,
                            const model::ModelInputs& inputs) {
  const auto layers = model::build_layers(experiment.model, inputs, 0,
                                          static_cast<int>(experiment.model.layers.size()));
  const auto tied = model::find_tied_weights(experiment.model, layers);
  return comm::TagSpace(
      {.kinds = pipeline::kDirections,
       .micro_batches = experiment.pipeline.micro_batches,
       .chunks = experiment.pipeline.virtual_stages,
       .tensors = std::max(1, static_cast<int>(weight_layout(layers, std::nullopt).size())),
       .tied_uses = tied && experiment.optimizer.shard_across_replicas
                        ? static_cast<int>(tied->uses().size())
                        : 0});
}

void check_message_tags(const config::Experiment& experiment, const comm::TagSpace& tags,
                        int tag_ub) {
  if (auto problem = tags.problem(tag_ub)) {
    throw InputError(fmt::format("{}: {} micro-batches: {}",
                                 experiment.where("pipeline.micro_batches"),
                                 experiment.pipeline.micro_batches, *problem));
  }
}

}  // namespace mpipe::train
