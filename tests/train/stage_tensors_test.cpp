// Tests for the state layout a stage restores: the names stage_state writes (checkpoint names),
// known from the layers alone, and the layer each name belongs to.
#include "train/stage_tensors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "model/model_builder.h"
#include "optim/optimizer.h"

namespace mpipe::train {
namespace {

model::ModelSpec three_layers() {
  model::ModelSpec spec;
  spec.where = {"exp.yaml", 5, "model"};
  for (const char* kind : {"linear", "relu", "linear"}) {
    model::LayerSpec layer{.kind = kind, .attrs = {}, .where = {"exp.yaml", 6, "model.layers"}};
    if (std::string(kind) == "linear") {
      layer.attrs["units"] = {.value = int64_t{4}, .where = {"exp.yaml", 6, "model.layers"}};
    }
    spec.layers.push_back(std::move(layer));
  }
  return spec;
}

TEST(StateLayout, NamesWhatStageStateWritesFromTheLayersAlone) {
  const model::ModelSpec spec = three_layers();
  const Shape input{5};
  for (auto [begin, end] : {std::pair{0, 3}, std::pair{1, 3}, std::pair{2, 3}}) {
    pipeline::Stage stage(model::build_layers(spec, input, begin, end), plan::Recompute::kAlways,
                          1);
    optim::OptimizerConfig config;  // Adam: two state slots
    auto optimizer = optim::Optimizer::make(config, stage.params().num_params(), {});
    std::vector<std::string> slots;
    for (const auto& [slot, state] : optimizer->state()) slots.push_back(slot);
    std::set<std::string> written;
    for (const auto& tensor : stage_state(stage, *optimizer, std::nullopt)) {
      written.insert(tensor.name);
    }
    std::set<std::string> laid_out;
    for (const auto& tensor :
         state_layout(model::build_layers(spec, input, begin, end), slots, std::nullopt)) {
      laid_out.insert(tensor.name);
    }
    EXPECT_EQ(laid_out, written) << begin;
    EXPECT_FALSE(written.empty());
  }
}

TEST(StateLayout, EachNameBelongsToItsGlobalLayer) {
  EXPECT_EQ(layer_of_state_tensor("layers.12.weight"), 12);
  EXPECT_EQ(layer_of_state_tensor("optim.exp_avg.layers.3.bias"), 3);
  EXPECT_EQ(layer_of_state_tensor("optim.exp_avg_sq.layers.0.token"), 0);
}

}  // namespace
}  // namespace mpipe::train
