// Naming, listing and restoring a stage's weights and optimizer state.
#include "train/stage_tensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "checkpoint/weights_file.h"
#include "core/error.h"

namespace mpipe::train {
namespace {

using Tied = std::optional<model::TiedWeights>;

std::string weight_name(int layer, const std::string& name) {
  return fmt::format("{}{}.{}", checkpoint::kWeightPrefix, layer, name);
}

// Under `tied`, a copy of the tied matrix (a later embedding's, a head's): files hold it once,
// under the first embedding's name (stored_name), and a stage that holds the copy restores it
// from there.
bool is_tied_copy(const Tied& tied, int layer, const std::string& name) {
  return tied && tied->is_copy(layer, name);
}

std::string stored_name(const Tied& tied, int layer, const std::string& name) {
  return is_tied_copy(tied, layer, name)
             ? weight_name(tied->embedding, model::TiedWeights::kEmbeddingParam)
             : weight_name(layer, name);
}

// Calls visit(name, shape, values, copy) for every weight of the stage in weight_layout order;
// `name` is the one files store it under (the embedding's for a tied copy), `copy` a tied copy's
// own name ("" for every other weight).
template <typename Stage, typename Visit>
void for_each_weight(Stage& stage, const Tied& tied, Visit visit) {
  auto& params = stage.params();
  for (const auto& layer : stage.layers()) {
    for (bool trainable : {true, false}) {
      for (const auto& entry : params.entries()) {
        if (entry.global_layer != layer->global_index() || entry.trainable != trainable) continue;
        auto storage = trainable ? params.values() : params.buffers();
        visit(stored_name(tied, entry.global_layer, entry.name), entry.shape,
              storage.subspan(static_cast<size_t>(entry.offset),
                              static_cast<size_t>(entry.shape.numel())),
              is_tied_copy(tied, entry.global_layer, entry.name)
                  ? weight_name(entry.global_layer, entry.name)
                  : std::string());
      }
    }
  }
}

// Calls visit(name, shape, values, tied_copy) for every optimizer-state tensor of the stage: per
// slot of the optimizer ("exp_avg", ...), one per trainable parameter, named
// "optim.<slot>.<stored weight name>".
template <typename Visit>
void for_each_optimizer_tensor(const pipeline::Stage& stage, optim::Optimizer& optimizer,
                               const Tied& tied, Visit visit) {
  for (const auto& [slot, state] : optimizer.state()) {
    for (const auto& entry : stage.params().entries()) {
      if (!entry.trainable) continue;
      visit(fmt::format("optim.{}.{}", slot, stored_name(tied, entry.global_layer, entry.name)),
            entry.shape,
            state.subspan(static_cast<size_t>(entry.offset),
                          static_cast<size_t>(entry.shape.numel())),
            is_tied_copy(tied, entry.global_layer, entry.name));
    }
  }
}

}  // namespace

std::vector<WeightSlot> weight_layout(const std::vector<std::unique_ptr<nn::Layer>>& layers,
                                      const Tied& tied) {
  std::vector<WeightSlot> layout;
  for (const auto& layer : layers) {
    const int index = layer->global_index();
    for (const auto& spec : layer->param_specs()) {
      if (is_tied_copy(tied, index, spec.name)) continue;
      layout.push_back({index, {weight_name(index, spec.name), spec.shape}});
    }
    for (const auto& spec : layer->buffer_specs()) {
      layout.push_back({index, {weight_name(index, spec.name), spec.shape}});
    }
  }
  return layout;
}

std::vector<checkpoint::TensorInfo> state_layout(
    const std::vector<std::unique_ptr<nn::Layer>>& layers,
    const std::vector<std::string>& optimizer_slots, const Tied& tied) {
  std::vector<checkpoint::TensorInfo> weights;
  std::vector<checkpoint::TensorInfo> trainable;
  for (const auto& layer : layers) {
    const int index = layer->global_index();
    for (const auto& spec : layer->param_specs()) {
      trainable.push_back({stored_name(tied, index, spec.name), spec.shape});
      weights.push_back(trainable.back());
    }
    for (const auto& spec : layer->buffer_specs()) {
      weights.push_back({weight_name(index, spec.name), spec.shape});
    }
  }
  for (const std::string& slot : optimizer_slots) {
    for (const auto& param : trainable) {
      weights.push_back({fmt::format("optim.{}.{}", slot, param.name), param.shape});
    }
  }
  std::vector<checkpoint::TensorInfo> layout;
  std::set<std::string> seen;
  for (auto& tensor : weights) {
    if (seen.insert(tensor.name).second) layout.push_back(std::move(tensor));
  }
  return layout;
}

int layer_of_state_tensor(const std::string& name) {
  const size_t at = name.find(checkpoint::kWeightPrefix);
  check(at != std::string::npos, "{} is not a state tensor's name", name);
  return std::stoi(name.substr(at + checkpoint::kWeightPrefix.size()));
}

std::vector<std::span<const float>> weight_values(const pipeline::Stage& stage, const Tied& tied) {
  std::vector<std::span<const float>> values;
  for_each_weight(stage, tied,
                  [&values](const std::string&, const Shape&, auto view, const std::string& copy) {
                    if (copy.empty()) values.emplace_back(view.data(), view.size());
                  });
  return values;
}

std::vector<checkpoint::TensorView> stage_state(const pipeline::Stage& stage,
                                                optim::Optimizer& optimizer, const Tied& tied) {
  std::vector<checkpoint::TensorView> tensors;
  for (HeldTensor& held : held_stage_state(stage, optimizer, tied, false)) {
    tensors.push_back(std::move(held.view));
  }
  return tensors;
}

std::vector<HeldTensor> held_stage_state(const pipeline::Stage& stage, optim::Optimizer& optimizer,
                                         const Tied& tied, bool sharded) {
  std::vector<HeldTensor> tensors;
  for_each_weight(stage, tied,
                  [&tensors](const std::string& name, const Shape& shape, auto values,
                             const std::string& copy) {
                    if (copy.empty()) {
                      tensors.push_back({{name, shape, {values.data(), values.size()}}, false});
                    }
                  });
  const optim::ParamRange owned = optimizer.owned();
  check(sharded || (owned.begin == 0 && owned.end == optimizer.num_params()),
        "held_stage_state: an optimizer of a shard, not sharded");
  for (const auto& [slot, state] : optimizer.state()) {
    for (const auto& entry : stage.params().entries()) {
      if (!entry.trainable || is_tied_copy(tied, entry.global_layer, entry.name)) continue;
      // The tensor's parameters [entry.offset, + numel) within the owned ones, counted from the
      // first owned parameter (where state() begins).
      const int64_t begin = std::clamp(entry.offset, owned.begin, owned.end);
      const int64_t end = std::clamp(entry.offset + entry.shape.numel(), owned.begin, owned.end);
      tensors.push_back(
          {{fmt::format("optim.{}.{}", slot, stored_name(tied, entry.global_layer, entry.name)),
            entry.shape,
            state.subspan(static_cast<size_t>(begin - owned.begin),
                          static_cast<size_t>(end - begin))},
           sharded});
    }
  }
  return tensors;
}

void NeededTensors::need(const std::string& name, const Shape& shape) {
  if (needed_.try_emplace(name, shape, false).second) order_.push_back(name);
}

bool NeededTensors::offer(const std::string& name, const Shape& shape) {
  const auto it = needed_.find(name);
  if (it == needed_.end()) return false;
  check_shape(name, shape, it->second.first);
  it->second.second = true;
  return true;
}

void NeededTensors::check_shape(const std::string& name, const Shape& shape,
                                const Shape& needed) const {
  check_input(shape == needed, "{}: tensor {} has shape {}, the model needs {}", source_, name,
              shape, needed);
}

void NeededTensors::finish() const {
  for (const std::string& name : order_) {
    check_input(needed_.at(name).second, "{}: tensor {} is missing", source_, name);
  }
}

namespace {

// The tensors of a stage (or of a rank's stages) by name, writable: where a restore puts each,
// checking that every one is found once with the model's shape. A name may have several
// destinations (the copies of a tied matrix on one rank): the first is read into, the others
// get copies (finish). A tied copy's own name, should a file hold it, is read aside and must equal
// what the stage restored.
class Destinations {
 public:
  explicit Destinations(const std::string& source) : needed_(source), source_(source) {}

  void add(const std::string& name, const Shape& shape, std::span<float> values) {
    needed_.need(name, shape);
    slots_[name].push_back(values);
  }
  // `name` (a tied copy's own) is checked against `stored`, when a file holds it.
  void add_check(const std::string& name, const Shape& shape, const std::string& stored) {
    checks_[name] = {shape, stored, {}};
  }
  // The span for `name`, or nullopt when the stage has no such tensor.
  std::optional<std::span<float>> take(const std::string& name, const Shape& shape) {
    if (auto check = checks_.find(name); check != checks_.end()) {
      needed_.check_shape(name, shape, check->second.shape);
      check->second.values.resize(static_cast<size_t>(shape.numel()));
      return std::span<float>(check->second.values);
    }
    if (!needed_.offer(name, shape)) return std::nullopt;
    return slots_.at(name).front();
  }
  // After the read: every tensor found, copies made, tied copies held by the file equal.
  void finish() const {
    needed_.finish();
    for (const auto& [name, values] : slots_) {
      for (size_t i = 1; i < values.size(); ++i) {
        std::copy(values.front().begin(), values.front().end(), values[i].begin());
      }
    }
    for (const auto& [name, check] : checks_) {
      const std::span<const float> stored = slots_.at(check.stored).front();
      check_input(
          check.values.empty() ||
              std::equal(stored.begin(), stored.end(), check.values.begin(), check.values.end()),
          "{}: tensor {} is tied to {} but holds other values", source_, name, check.stored);
    }
  }

 private:
  struct Check {
    Shape shape;
    std::string stored;
    std::vector<float> values;  // what the file holds under the copy's own name
  };
  NeededTensors needed_;
  const std::string& source_;
  std::map<std::string, std::vector<std::span<float>>> slots_;
  std::map<std::string, Check> checks_;
};

// Every weight of the stage as a destination, except those `keep` names (by their names in files).
void add_weights(pipeline::Stage& stage, const Tied& tied, Destinations& destinations,
                 const std::function<bool(const std::string&)>& keep = nullptr) {
  for_each_weight(stage, tied,
                  [&](const std::string& name, const Shape& shape, std::span<float> values,
                      const std::string& copy) {
                    if (keep && keep(name)) return;
                    destinations.add(name, shape, values);
                    if (!copy.empty()) destinations.add_check(copy, shape, name);
                  });
}

}  // namespace

void load_stage_weights(pipeline::Stage& stage, const std::vector<checkpoint::NamedTensor>& tensors,
                        const std::string& source, const Tied& tied) {
  Destinations destinations(source);
  add_weights(stage, tied, destinations);
  for (const checkpoint::NamedTensor& tensor : tensors) {
    if (auto values = destinations.take(tensor.name, tensor.shape)) {
      std::copy(tensor.values.begin(), tensor.values.end(), values->begin());
    }
  }
  destinations.finish();
}

void load_stage_weights(pipeline::Stage& stage,
                        const std::function<void(const checkpoint::TensorDestination&)>& read,
                        const std::string& source,
                        const std::function<bool(const std::string&)>& keep, const Tied& tied) {
  Destinations destinations(source);
  add_weights(stage, tied, destinations, keep);
  read([&destinations](const std::string& name, const Shape& shape) {
    return destinations.take(name, shape);
  });
  destinations.finish();
}

void load_rank_state(const std::vector<ChunkState>& chunks,
                     const std::function<void(const checkpoint::TensorDestination&)>& read,
                     const std::string& source, const Tied& tied) {
  Destinations destinations(source);
  for (const ChunkState& chunk : chunks) {
    add_weights(*chunk.stage, tied, destinations);
    for_each_optimizer_tensor(
        *chunk.stage, *chunk.optimizer, tied,
        [&destinations](const std::string& name, const Shape& shape, std::span<float> values,
                        bool) { destinations.add(name, shape, values); });
  }
  read([&destinations](const std::string& name, const Shape& shape) {
    return destinations.take(name, shape);
  });
  destinations.finish();
}

}  // namespace mpipe::train
