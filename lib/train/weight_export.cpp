// Streaming the first replica's weights, tensor by tensor, into one safetensors file on rank 0.
#include "train/weight_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "checkpoint/weights_file.h"
#include "comm/agree.h"
#include "core/error.h"
#include "core/tensor.h"
#include "model/model_builder.h"
#include "train/finite_check.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
namespace {

// One tensor's values as a flat Tensor: memory the account (and pipeline.memory_limit) sees.
Tensor flat_copy(std::span<const float> values) {
  return Tensor(Shape{static_cast<int64_t>(values.size())}, values);
}

// Stage s > 0 of the first replica: its tensors to stage 0, one at a time (the send owns a
// copy of one tensor only).
void send_weights(Trainer& trainer) {
  const comm::Communicator& pipeline = trainer.groups().pipeline;
  int index = 0;
  for (std::span<const float> values : weight_values(trainer.stage(), trainer.tied())) {
    auto copy = std::make_shared<const Tensor>(flat_copy(values));
    const std::span<const float> data = copy->span();
    comm::Request send = pipeline.isend(data, std::move(copy), 0, trainer.tags().tensor(index++));
    send.wait();
  }
}

// Stage 0 of the first replica: writes the model's tensors in global layer order, its own from
// memory and every other stage's as they arrive. A failure (a non-finite value, a full disk)
// stops the writing but not the receiving, so no sender waits forever; it is returned.
std::string write_weights(Trainer& trainer, const config::Experiment& experiment,
                          const data::Dataset& dataset, const std::string& path,
                          const std::vector<int>& first_layer_of_stage) {
  const auto layers = model::build_layers(experiment.model, dataset.input_shape(), 0,
                                          static_cast<int>(experiment.model.layers.size()));
  const std::vector<WeightSlot> layout = weight_layout(layers, trainer.tied());
  const std::vector<std::span<const float>> own = weight_values(trainer.stage(), trainer.tied());
  std::vector<checkpoint::TensorInfo> tensors;
  for (const WeightSlot& slot : layout) tensors.push_back(slot.tensor);

  std::string error;
  std::optional<checkpoint::SafetensorsWriter> writer;
  auto attempt = [&error](auto&& action) {
    if (!error.empty()) return;
    try {
      action();
    } catch (const Error& e) {
      error = e.what();
    }
  };
  std::optional<checkpoint::TiedNames> tied;
  if (trainer.tied()) {  // the head's copy is left out: a loader points it at the embedding's
    tied = checkpoint::TiedNames{
        .copy = fmt::format("layers.{}.{}", trainer.tied()->head, model::TiedWeights::kHeadParam),
        .stored = fmt::format("layers.{}.{}", trainer.tied()->embedding,
                              model::TiedWeights::kEmbeddingParam)};
  }
  attempt([&] {
    writer.emplace(path, tensors, checkpoint::weights_file_metadata(experiment.source, tied));
  });
  std::vector<int> sent(first_layer_of_stage.size(), 0);  // tensors received per stage
  Tensor buffer;                                          // the tensor being received
  for (size_t t = 0; t < layout.size(); ++t) {
    const auto stage =
        static_cast<int>(std::upper_bound(first_layer_of_stage.begin(), first_layer_of_stage.end(),
                                          layout[t].global_layer) -
                         first_layer_of_stage.begin() - 1);
    const int index = sent[static_cast<size_t>(stage)]++;
    std::span<const float> values;
    if (stage == 0) {
      values = own.at(static_cast<size_t>(index));
    } else {
      buffer = Tensor();  // the previous one is freed first
      buffer = Tensor::uninitialized(Shape{layout[t].tensor.shape.numel()});
      trainer.groups().pipeline.irecv(buffer.span(), stage, trainer.tags().tensor(index)).wait();
      values = buffer.span();
    }
    attempt([&] {
      check(all_finite(values), "{}: not exporting weights: {} holds a non-finite value", path,
            layout[t].tensor.name);
      writer->write(values);
    });
  }
  attempt([&] { writer->commit(); });
  return error;
}

}  // namespace

void export_weights(Trainer& trainer, const config::Experiment& experiment,
                    const data::Dataset& dataset, const std::string& path) {
  std::string error;
  if (trainer.topology().replica == 0) {
    // Where each stage's layers begin, so stage 0 knows who sends which tensor.
    const double mine = trainer.layer_range().begin;
    std::vector<int> first_layer_of_stage;
    for (double begin : trainer.groups().pipeline.allgatherv(std::span<const double>(&mine, 1))) {
      first_layer_of_stage.push_back(static_cast<int>(begin));
    }
    if (trainer.topology().stage == 0) {
      error = write_weights(trainer, experiment, dataset, path, first_layer_of_stage);
    } else {
      send_weights(trainer);
    }
  }
  // Every rank learns whether the file was written.
  comm::agree(trainer.world(), [&] {
    if (!error.empty()) throw Error(error);
  });
}

}  // namespace mpipe::train
