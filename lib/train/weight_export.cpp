// Gathering weights to rank 0 and writing them as safetensors.
#include "train/weight_export.h"

#include "checkpoint/safetensors.h"
#include "comm/agree.h"
#include "core/error.h"
#include "model/model_builder.h"
#include "train/finite_check.h"
#include "train/stage_tensors.h"

namespace mpipe::train {

std::vector<checkpoint::NamedTensor> export_weights(Trainer& trainer,
                                                    const config::Experiment& experiment,
                                                    const data::Dataset& dataset,
                                                    const std::string& path) {
  std::vector<checkpoint::NamedTensor> weights;
  if (trainer.topology().replica == 0) {
    std::vector<float> flat = trainer.groups().pipeline.gatherv(pack_weights(trainer.stage()), 0);
    if (trainer.topology().stage == 0) {
      // Rank 0 rebuilds the whole layer list (cheap: layers allocate nothing until bound) to
      // name what the stages sent, in stage order = global layer order.
      auto layers = model::build_layers(experiment.model, dataset.input_shape(), 0,
                                        static_cast<int>(experiment.model.layers.size()));
      weights = unpack_weights(weight_layout(layers), flat);
    }
  }
  // Rank 0 writes; every rank learns whether that worked (a full disk, a vanished folder).
  comm::agree(trainer.world(), [&] {
    if (weights.empty()) return;
    for (const checkpoint::NamedTensor& tensor : weights) {
      check(all_finite(tensor.values), "{}: not exporting weights: {} holds a non-finite value",
            path, tensor.name);
    }
    checkpoint::write_safetensors(
        path, weights, {{"format", "pt"}, {"producer", "mpipe"}, {"config", experiment.source}});
  });
  return weights;
}

}  // namespace mpipe::train
