// Naming, listing and restoring a stage's weights and optimizer state.
#include "train/stage_tensors.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace mpipe::train {
namespace {

std::string weight_name(int layer, const std::string& name) {
  return fmt::format("layers.{}.{}", layer, name);
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

std::vector<checkpoint::NamedTensor> stage_state(const pipeline::Stage& stage,
                                                 optim::Optimizer& optimizer) {
  std::vector<checkpoint::NamedTensor> tensors;
  for_each_weight(stage, [&tensors](const std::string& name, const Shape& shape, auto values) {
    tensors.push_back({name, shape, std::vector<float>(values.begin(), values.end())});
  });
  for (const auto& [slot, state] : optimizer.state()) {
    for (const auto& entry : stage.params().entries()) {
      if (!entry.trainable) continue;
      auto values = state.subspan(static_cast<size_t>(entry.offset),
                                  static_cast<size_t>(entry.shape.numel()));
      tensors.push_back(
          {fmt::format("optim.{}.{}", slot, weight_name(entry.global_layer, entry.name)),
           entry.shape, std::vector<float>(values.begin(), values.end())});
    }
  }
  return tensors;
}

namespace {

// Copies the named tensor into `values`, checking that it exists and has the expected shape.
class Restorer {
 public:
  Restorer(const std::vector<checkpoint::NamedTensor>& tensors, const std::string& source)
      : source_(source) {
    for (const auto& tensor : tensors) by_name_[tensor.name] = &tensor;
  }
  void operator()(const std::string& name, const Shape& shape, std::span<float> values) const {
    auto it = by_name_.find(name);
    check_input(it != by_name_.end(), "{}: tensor {} is missing", source_, name);
    check_input(it->second->shape == shape, "{}: tensor {} has shape {}, the model needs {}",
                source_, name, it->second->shape, shape);
    std::copy(it->second->values.begin(), it->second->values.end(), values.begin());
  }

 private:
  const std::string& source_;
  std::map<std::string, const checkpoint::NamedTensor*> by_name_;
};

}  // namespace

void load_stage_weights(pipeline::Stage& stage, const std::vector<checkpoint::NamedTensor>& tensors,
                        const std::string& source) {
  for_each_weight(stage, Restorer(tensors, source));
}

void load_stage_state(pipeline::Stage& stage, optim::Optimizer& optimizer,
                      const std::vector<checkpoint::NamedTensor>& tensors,
                      const std::string& source) {
  const Restorer restore(tensors, source);
  for_each_weight(stage, restore);
  for (const auto& [slot, state] : optimizer.state()) {
    for (const auto& entry : stage.params().entries()) {
      if (!entry.trainable) continue;
      restore(fmt::format("optim.{}.{}", slot, weight_name(entry.global_layer, entry.name)),
              entry.shape,
              state.subspan(static_cast<size_t>(entry.offset),
                            static_cast<size_t>(entry.shape.numel())));
    }
  }
}

}  // namespace mpipe::train
