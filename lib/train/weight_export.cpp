// Streaming the first replica's weights, tensor by tensor, to rank 0: into one safetensors file
// (the export), or into memory (the translation scores' decoding).
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
#include "config/resolved_settings.h"
#include "core/error.h"
#include "core/tensor.h"
#include "model/model_builder.h"
#include "train/data_contract.h"
#include "train/finite_check.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
namespace {

// One tensor's values as a flat Tensor: memory the account (and pipeline.memory_limit) sees.
Tensor flat_copy(std::span<const float> values) {
  return Tensor(Shape{static_cast<int64_t>(values.size())}, values);
}

// Every tensor this rank's chunks hold, chunk 0's first (so in ascending global layer order).
std::vector<std::span<const float>> rank_weight_values(Trainer& trainer) {
  std::vector<std::span<const float>> values;
  for (int chunk = 0; chunk < trainer.num_chunks(); ++chunk) {
    for (std::span<const float> tensor : weight_values(trainer.stage(chunk), trainer.tied())) {
      values.push_back(tensor);
    }
  }
  return values;
}

// Rank r > 0 of the first replica: its tensors to rank 0, one at a time (the send owns a
// copy of one tensor only), tagged by their index among the rank's tensors.
void send_weights(Trainer& trainer) {
  const comm::Communicator& pipeline = trainer.groups().pipeline;
  int index = 0;
  for (std::span<const float> values : rank_weight_values(trainer)) {
    auto copy = std::make_shared<const Tensor>(flat_copy(values));
    const std::span<const float> data = copy->span();
    comm::Request send = pipeline.isend(data, std::move(copy), 0, trainer.tags().tensor(index++));
    send.wait();
  }
}

// Rank 0 of the first replica: every tensor of the model in global layer order to `sink`, its
// own from memory and every other rank's as they arrive (`first_layer_of_stage`: per global
// stage), after `begin` with their layout.
void receive_weights(Trainer& trainer, const config::Experiment& experiment,
                     const data::Dataset& dataset, const std::vector<int>& first_layer_of_stage,
                     const WeightLayoutSink& begin, const WeightSink& sink) {
  const auto layers = model::build_layers(experiment.model, model_inputs(dataset), 0,
                                          static_cast<int>(experiment.model.layers.size()));
  const std::vector<WeightSlot> layout = weight_layout(layers, trainer.tied());
  const std::vector<std::span<const float>> own = rank_weight_values(trainer);
  std::vector<checkpoint::TensorInfo> tensors;
  for (const WeightSlot& slot : layout) tensors.push_back(slot.tensor);
  begin(tensors);
  std::vector<int> sent(static_cast<size_t>(trainer.placement().num_ranks), 0);  // per rank
  Tensor buffer;  // the tensor being received
  for (size_t t = 0; t < layout.size(); ++t) {
    const auto stage =
        static_cast<int>(std::upper_bound(first_layer_of_stage.begin(), first_layer_of_stage.end(),
                                          layout[t].global_layer) -
                         first_layer_of_stage.begin() - 1);
    const int rank = trainer.placement().rank_of(stage);
    const int index = sent[static_cast<size_t>(rank)]++;
    std::span<const float> values;
    if (rank == 0) {
      values = own.at(static_cast<size_t>(index));
    } else {
      buffer = Tensor();  // the previous one is freed first
      buffer = Tensor::uninitialized(Shape{layout[t].tensor.shape.numel()});
      trainer.groups().pipeline.irecv(buffer.span(), rank, trainer.tags().tensor(index)).wait();
      values = buffer.span();
    }
    sink(layout[t].tensor, values);
  }
}

// The tied matrix's names in a weights file, when the model ties one.
std::optional<checkpoint::TiedNames> tied_names(const Trainer& trainer) {
  if (!trainer.tied()) return std::nullopt;
  // The copies are left out: a loader points them at the embedding's.
  checkpoint::TiedNames tied{.copies = {},
                             .stored = fmt::format("layers.{}.{}", trainer.tied()->embedding,
                                                   model::TiedWeights::kEmbeddingParam)};
  for (const model::TiedUse& copy : trainer.tied()->copies) {
    tied.copies.push_back(fmt::format("layers.{}.{}", copy.layer, copy.param));
  }
  return tied;
}

}  // namespace

void stream_weights(Trainer& trainer, const config::Experiment& experiment,
                    const data::Dataset& dataset, const WeightLayoutSink& begin,
                    const WeightSink& sink) {
  if (trainer.topology().replica != 0) return;
  // Where each global stage's layers begin, so rank 0 knows who sends which tensor (gathered
  // rank by rank, chunk by chunk: rank r's chunk c is stage placement().stage_of(r, c)).
  std::vector<double> mine;
  for (int chunk = 0; chunk < trainer.num_chunks(); ++chunk) {
    mine.push_back(trainer.layer_range(chunk).begin);
  }
  const std::vector<double> all = trainer.groups().pipeline.allgatherv(mine);
  std::vector<int> first_layer_of_stage(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const auto rank = static_cast<int>(i) / trainer.num_chunks();
    const auto chunk = static_cast<int>(i) % trainer.num_chunks();
    first_layer_of_stage[static_cast<size_t>(trainer.placement().stage_of(rank, chunk))] =
        static_cast<int>(all[i]);
  }
  if (trainer.topology().pipeline_rank == 0) {
    receive_weights(trainer, experiment, dataset, first_layer_of_stage, begin, sink);
  } else {
    send_weights(trainer);
  }
}

void export_weights(Trainer& trainer, const config::Experiment& experiment,
                    const data::Dataset& dataset, const std::string& path) {
  // A failure (a non-finite value, a full disk) stops the writing but not the receiving, so no
  // sender waits forever.
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
  stream_weights(
      trainer, experiment, dataset,
      [&](const std::vector<checkpoint::TensorInfo>& layout) {
        attempt([&] {
          writer.emplace(
              path, layout,
              checkpoint::weights_file_metadata(
                  experiment.source, config::resolved_settings(experiment), tied_names(trainer)));
        });
      },
      [&](const checkpoint::TensorInfo& tensor, std::span<const float> values) {
        attempt([&] {
          check(all_finite(values), "{}: not exporting weights: {} holds a non-finite value", path,
                tensor.name);
          writer->write(values);
        });
      });
  if (writer) attempt([&] { writer->commit(); });  // the writing rank's
  // Every rank learns whether the file was written.
  comm::agree(trainer.world(), [&] {
    if (!error.empty()) throw Error(error);
  });
}

}  // namespace mpipe::train
