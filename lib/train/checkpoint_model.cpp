// A checkpoint's model rebuilt from its manifest's settings and inputs, against its tensors.
#include "train/checkpoint_model.h"

#include "checkpoint/checkpoint_store.h"
#include "config/stored_settings.h"
#include "core/error.h"
#include "optim/optimizer.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
namespace {

constexpr const char* kInputsKey = "inputs";

// meta.json's inputs (`inputs_record`'s form).
model::ModelInputs recorded_inputs(const nlohmann::json& meta, const std::string& meta_path) {
  const nlohmann::json& record = checkpoint::required_key(meta, meta_path, kInputsKey);
  const auto fail = [&] {
    throw InputError(
        fmt::format("{}: {}: must be a list of {{\"name\": text, \"shape\": [sizes > 0]}}",
                    meta_path, kInputsKey));
  };
  if (!record.is_array() || record.empty()) fail();
  model::ModelInputs inputs;
  for (const nlohmann::json& input : record) {
    if (!input.is_object() || !input.contains("name") || !input["name"].is_string() ||
        !input.contains("shape") || !input["shape"].is_array()) {
      fail();
    }
    std::vector<int64_t> dims;
    for (const nlohmann::json& dim : input["shape"]) {
      if (!dim.is_number_integer() || dim.get<int64_t>() <= 0) fail();
      dims.push_back(dim.get<int64_t>());
    }
    inputs.push_back({.name = input["name"].get<std::string>(), .shape = Shape(std::move(dims))});
  }
  return inputs;
}

}  // namespace

nlohmann::json inputs_record(const model::ModelInputs& inputs) {
  nlohmann::json record = nlohmann::json::array();
  for (const model::ModelInput& input : inputs) {
    record.push_back({{"name", input.name}, {"shape", input.shape.dims()}});
  }
  return record;
}

void check_checkpoint_model(const checkpoint::CheckpointTensors& checkpoint) {
  const config::StoredModel stored =
      config::stored_model(checkpoint.settings, checkpoint.meta_path);
  const model::ModelInputs inputs = recorded_inputs(checkpoint.meta, checkpoint.meta_path);
  const model::ModelPlan plan = model::plan_model(stored.model, inputs);
  const auto layers =
      model::build_layers(stored.model, inputs, 0, static_cast<int>(stored.model.layers.size()));
  std::vector<std::string> slots;
  for (const auto& [slot, values] : optim::Optimizer::make(stored.optimizer, 0)->state()) {
    slots.push_back(slot);
  }
  NeededTensors needed(checkpoint.step_dir);
  for (const checkpoint::TensorInfo& tensor : state_layout(layers, slots, plan.tied)) {
    needed.need(tensor.name, tensor.shape);
  }
  for (const checkpoint::TensorInfo& tensor : checkpoint.tensors) {
    needed.offer(tensor.name, tensor.shape);
  }
  needed.finish();
}

}  // namespace mpipe::train
