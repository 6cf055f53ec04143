// Naming, listing and restoring a stage's weights and optimizer state.
#include "train/stage_tensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "checkpoint/weights_file.h"
#include "core/error.h"

namespace mpipe::train {
namespace {

std::string weight_name(int layer, const std::string& name) {
  return fmt::format("{}{}.{}", checkpoint::kWeightPrefix, layer, name);
}

// Calls visit(name, values) for every weight of the stage in weight_layout order.
template <typename Stage, typename Visit>
void for_each_weight(Stage& stage, Visit visit) {
  auto& params = stage.params();
  for (const auto& layer : stage.layers()) {
    for (bool trainable : {true, false}) {
      for (const auto& entry : params.entries()) {
        if (entry.global_layer != layer->global_index() || entry.trainable != trainable) continue;
        auto storage = trainable ? params.values() : params.buffers();
        visit(weight_name(entry.global_layer, entry.name), entry.shape,
              storage.subspan(static_cast<size_t>(entry.offset),
                              static_cast<size_t>(entry.shape.numel())));
      }
    }
  }
}

// Calls visit(name, shape, values) for every optimizer-state tensor of the stage: per slot of the
// optimizer ("exp_avg", ...), one per trainable parameter, named "optim.<slot>.<weight name>".
template <typename Visit>
void for_each_optimizer_tensor(const pipeline::Stage& stage, optim::Optimizer& optimizer,
                               Visit visit) {
  for (const auto& [slot, state] : optimizer.state()) {
    for (const auto& entry : stage.params().entries()) {
      if (!entry.trainable) continue;
      visit(fmt::format("optim.{}.{}", slot, weight_name(entry.global_layer, entry.name)),
            entry.shape,
            state.subspan(static_cast<size_t>(entry.offset),
                          static_cast<size_t>(entry.shape.numel())));
    }
  }
}

}  // namespace

std::vector<WeightSlot> weight_layout(const std::vector<std::unique_ptr<nn::Layer>>& layers) {
  std::vector<WeightSlot> layout;
  for (const auto& layer : layers) {
    const int index = layer->global_index();
    for (const auto& spec : layer->param_specs()) {
      layout.push_back({index, {weight_name(index, spec.name), spec.shape}});
    }
    for (const auto& spec : layer->buffer_specs()) {
      layout.push_back({index, {weight_name(index, spec.name), spec.shape}});
    }
  }
  return layout;
}

std::vector<std::span<const float>> weight_values(const pipeline::Stage& stage) {
  std::vector<std::span<const float>> values;
  for_each_weight(stage, [&values](const std::string&, const Shape&, auto view) {
    values.emplace_back(view.data(), view.size());
  });
  return values;
}

std::vector<checkpoint::TensorView> stage_state(const pipeline::Stage& stage,
                                                optim::Optimizer& optimizer) {
  std::vector<checkpoint::TensorView> tensors;
  for_each_weight(stage, [&tensors](const std::string& name, const Shape& shape, auto values) {
    tensors.push_back({name, shape, {values.data(), values.size()}});
  });
  for_each_optimizer_tensor(stage, optimizer,
                            [&tensors](const std::string& name, const Shape& shape, auto values) {
                              tensors.push_back({name, shape, values});
                            });
  return tensors;
}

namespace {

// The stage's tensors by name, writable: where a restore puts each, checking that every one is
// found once with the model's shape.
class Destinations {
 public:
  explicit Destinations(const std::string& source) : source_(source) {}

  void add(const std::string& name, const Shape& shape, std::span<float> values) {
    order_.push_back(name);
    slots_[name] = {shape, values, false};
  }
  // The span for `name`, or nullopt when the stage has no such tensor.
  std::optional<std::span<float>> take(const std::string& name, const Shape& shape) {
    auto it = slots_.find(name);
    if (it == slots_.end()) return std::nullopt;
    check_input(it->second.shape == shape, "{}: tensor {} has shape {}, the model needs {}",
                source_, name, shape, it->second.shape);
    it->second.found = true;
    return it->second.values;
  }
  void check_complete() const {
    for (const std::string& name : order_) {
      check_input(slots_.at(name).found, "{}: tensor {} is missing", source_, name);
    }
  }

 private:
  struct Slot {
    Shape shape;
    std::span<float> values;
    bool found = false;
  };
  const std::string& source_;
  std::vector<std::string> order_;
  std::map<std::string, Slot> slots_;
};

void add_weights(pipeline::Stage& stage, Destinations& destinations) {
  for_each_weight(
      stage, [&destinations](const std::string& name, const Shape& shape, std::span<float> values) {
        destinations.add(name, shape, values);
      });
}

}  // namespace

void load_stage_weights(pipeline::Stage& stage, const std::vector<checkpoint::NamedTensor>& tensors,
                        const std::string& source) {
  Destinations destinations(source);
  add_weights(stage, destinations);
  for (const checkpoint::NamedTensor& tensor : tensors) {
    if (auto values = destinations.take(tensor.name, tensor.shape)) {
      std::copy(tensor.values.begin(), tensor.values.end(), values->begin());
    }
  }
  destinations.check_complete();
}

void load_stage_weights(pipeline::Stage& stage,
                        const std::function<void(const checkpoint::TensorDestination&)>& read,
                        const std::string& source,
                        const std::function<bool(const std::string&)>& keep) {
  Destinations destinations(source);
  for_each_weight(stage, [&](const std::string& name, const Shape& shape, std::span<float> values) {
    if (!keep(name)) destinations.add(name, shape, values);
  });
  read([&destinations](const std::string& name, const Shape& shape) {
    return destinations.take(name, shape);
  });
  destinations.check_complete();
}

void load_stage_state(pipeline::Stage& stage, optim::Optimizer& optimizer,
                      const std::function<void(const checkpoint::TensorDestination&)>& read,
                      const std::string& source) {
  Destinations destinations(source);
  add_weights(stage, destinations);
  for_each_optimizer_tensor(
      stage, optimizer,
      [&destinations](const std::string& name, const Shape& shape, std::span<float> values) {
        destinations.add(name, shape, values);
      });
  read([&destinations](const std::string& name, const Shape& shape) {
    return destinations.take(name, shape);
  });
  destinations.check_complete();
}

}  // namespace mpipe::train
