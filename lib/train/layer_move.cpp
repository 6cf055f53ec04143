// The point-to-point exchange of state tensors between a pipeline's ranks when layers move.
#include "train/layer_move.h"

#include <algorithm>
#include <map>
#include <span>
#include <string>

#include "core/error.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
namespace {

// The rank whose chunk held `layer` in the partition the move starts from.
int owner_of(const LayerMove& move, int layer) {
  for (size_t s = 0; s < move.from.size(); ++s) {
    if (move.from[s].begin <= layer && layer < move.from[s].end) {
      return move.placement.rank_of(static_cast<int>(s));
    }
  }
  check(false, "layer {} is in no stage of the partition", layer);
  return -1;
}

int64_t numel(const checkpoint::TensorInfo& tensor) { return tensor.shape.numel(); }

}  // namespace

void move_layer_state(const LayerMove& move, const std::vector<checkpoint::TensorView>& mine,
                      const checkpoint::TensorDestination& into) {
  const comm::Communicator& pipeline = *move.pipeline;
  const int me = pipeline.rank();
  const auto num_ranks = static_cast<int>(move.wanted.size());
  std::map<std::string, std::span<const float>> held;
  for (const checkpoint::TensorView& tensor : mine) held[tensor.name] = tensor.values;

  // Sends: to each other rank, the tensors it wants from this one, in its wanted order.
  std::vector<comm::Request> requests;
  for (int peer = 0; peer < num_ranks; ++peer) {
    if (peer == me) continue;
    std::vector<float> message;
    for (const auto& tensor : move.wanted[static_cast<size_t>(peer)]) {
      if (owner_of(move, layer_of_state_tensor(tensor.name)) != me) continue;
      const auto it = held.find(tensor.name);
      check(it != held.end() && std::ssize(it->second) == numel(tensor),
            "rank {} cannot send {} to rank {}", me, tensor.name, peer);
      message.insert(message.end(), it->second.begin(), it->second.end());
    }
    if (!message.empty()) {
      requests.push_back(pipeline.isend(message, peer, move.tag, "moved layer state"));
    }
  }
  // Receives: from each other rank, one message with what this rank wants from it.
  const auto& wanted = move.wanted[static_cast<size_t>(me)];
  std::vector<int> source(wanted.size());
  std::vector<int64_t> offset(wanted.size());
  std::vector<std::vector<float>> received(static_cast<size_t>(num_ranks));
  for (size_t i = 0; i < wanted.size(); ++i) {
    source[i] = owner_of(move, layer_of_state_tensor(wanted[i].name));
    auto& buffer = received[static_cast<size_t>(source[i])];
    offset[i] = std::ssize(buffer);
    if (source[i] != me) buffer.resize(buffer.size() + static_cast<size_t>(numel(wanted[i])));
  }
  for (int peer = 0; peer < num_ranks; ++peer) {
    auto& buffer = received[static_cast<size_t>(peer)];
    if (peer != me && !buffer.empty()) {
      requests.push_back(pipeline.irecv(buffer, peer, move.tag, "moved layer state"));
    }
  }
  for (comm::Request& request : requests) request.wait();

  for (size_t i = 0; i < wanted.size(); ++i) {
    const auto destination = into(wanted[i].name, wanted[i].shape);
    check(destination.has_value(), "rank {} has no place for {}", me, wanted[i].name);
    std::span<const float> values;
    if (source[i] == me) {
      const auto it = held.find(wanted[i].name);
      check(it != held.end(), "rank {} does not hold {}", me, wanted[i].name);
      values = it->second;
    } else {
      values = std::span<const float>(received[static_cast<size_t>(source[i])])
                   .subspan(static_cast<size_t>(offset[i]), static_cast<size_t>(numel(wanted[i])));
    }
    check(values.size() == destination->size(), "{}: {} values for {}", wanted[i].name,
          values.size(), destination->size());
    std::copy(values.begin(), values.end(), destination->begin());
  }
}

std::vector<double> move_peak_bytes(const plan::PipelinePlan& from, const plan::PipelinePlan& to,
                                    const plan::Placement& placement, const model::ModelPlan& model,
                                    int optimizer_slots) {
  std::vector<double> peak(static_cast<size_t>(placement.num_ranks), 0.0);
  for (int rank = 0; rank < placement.num_ranks; ++rank) {
    auto held_before = [&](int layer) {
      for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
        const plan::LayerRange& r =
            from.stages[static_cast<size_t>(placement.stage_of(rank, chunk))].layers;
        if (r.begin <= layer && layer < r.end) return true;
      }
      return false;
    };
    double& bytes = peak[static_cast<size_t>(rank)];
    for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
      const auto s = static_cast<size_t>(placement.stage_of(rank, chunk));
      bytes += from.stages[s].memory.state() + to.stages[s].memory.state();
      for (int l = to.stages[s].layers.begin; l < to.stages[s].layers.end; ++l) {
        if (held_before(l)) continue;
        const model::LayerPlan& layer = model.layers[static_cast<size_t>(l)];
        bytes += static_cast<double>(layer.param_bytes) * (1 + optimizer_slots) +
                 static_cast<double>(layer.buffer_bytes);
      }
    }
  }
  return peak;
}

}  // namespace mpipe::train
