// Tests for the walk over a stage's value and gradient tables: a skip MLP's live sets, what its
// forward holds beside each layer, what its per-layer recompute keeps, and the gradients its
// backward holds, byte for byte as pipeline::Stage fills them.
#include "plan/stage_values.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "model/model_builder.h"

namespace mpipe::plan {
namespace {

model::LayerSpec layer(int index, std::string kind,
                       std::map<std::string, model::AttrValue> values = {}) {
  const std::string path = "model.layers[" + std::to_string(index) + "]";
  model::LayerSpec s{.kind = std::move(kind), .attrs = {}, .where = {"exp.yaml", 10 + index, path}};
  for (auto& [key, value] : values) {
    s.attrs[key] = model::Attr{.value = std::move(value), .where = s.where};
  }
  return s;
}

model::ValueRef ref(std::string name) {
  return model::ValueRef{std::move(name), {"exp.yaml", 1, "x"}};
}

// Values: 0 the data ([3], 12 bytes), then layer i's output is value i + 1 ([4], 16 bytes but the
// last's [2]). Layer 0 saves h0, which layer 3 adds; layer 3 saves h1; layer 5 adds h1 and h0.
model::ModelPlan skip_mlp() {
  model::ModelSpec spec;
  spec.layers = {layer(0, "linear", {{"units", int64_t{4}}}), layer(1, "relu"),
                 layer(2, "linear", {{"units", int64_t{4}}}), layer(3, "add"),
                 layer(4, "linear", {{"units", int64_t{4}}}), layer(5, "add"),
                 layer(6, "linear", {{"units", int64_t{2}}})};
  spec.layers[0].save = ref("h0");
  spec.layers[3].reads = {ref("h0")};
  spec.layers[3].save = ref("h1");
  spec.layers[5].reads = {ref("h1"), ref("h0")};
  return model::plan_model(spec, Shape{3});
}

// Bytes per example as the tensors' own: one row, no allocator rounding.
double bytes(double b) { return b; }

TEST(StageValues, AChainHasNoValuesBesideItsLayers) {
  model::ModelSpec spec;
  spec.layers = {layer(0, "linear", {{"units", int64_t{4}}}), layer(1, "relu")};
  EXPECT_TRUE(value_costs(model::plan_model(spec, Shape{3})).empty());
}

TEST(StageValues, AStagesInputAndOutputAreItsLiveSetsAndTheirMessagesArePacked) {
  const StageValues walk = walk_stage(value_costs(skip_mlp()), 0, 4, bytes);
  EXPECT_EQ(walk.input, 12.0);  // the data
  EXPECT_EQ(walk.input_grads, 0.0);
  EXPECT_EQ(walk.output, 32.0);  // h1 (the main stream) and h0, relayed
  EXPECT_EQ(walk.output_message, 32.0);
  EXPECT_EQ(walk.output_grads, 32.0);
  EXPECT_EQ(walk.input_beside_main, 0.0);
  const StageValues second = walk_stage(value_costs(skip_mlp()), 4, 7, bytes);
  EXPECT_EQ(second.input, 32.0);
  EXPECT_EQ(second.input_beside_main, 16.0);  // h0 beside layer 4's main input h1
  EXPECT_EQ(second.input_grad_message, 32.0);
  EXPECT_EQ(second.output, 8.0);  // the model's output
}

TEST(StageValues, AForwardHoldsASavedValueUntilItsLastReader) {
  const StageValues walk = walk_stage(value_costs(skip_mlp()), 0, 4, bytes);
  // h0 is layer 1's main input and read again by layer 3: held beside layers 2 and 3, and layer 1
  // is not handed it; layers 2 and 3 are handed theirs.
  EXPECT_EQ(walk.forward_held, (std::vector<double>{0.0, 0.0, 16.0, 16.0}));
  EXPECT_EQ(walk.consumed, (std::vector<bool>{false, false, true, true}));
}

TEST(StageValues, PerLayerRecomputeKeepsEachValueReadOnce) {
  const StageValues walk = walk_stage(value_costs(skip_mlp()), 0, 4, bytes);
  // Layer 3 reads its main input and h0, which layer 1 read first.
  EXPECT_EQ(walk.first_kept, (std::vector<double>{12.0, 16.0, 16.0, 16.0}));
  // Its first forward frees nothing: the data, then every output so far.
  EXPECT_EQ(walk.per_layer_forward_held, (std::vector<double>{12.0, 28.0, 44.0, 60.0}));
}

TEST(StageValues, ABackwardHoldsAValuesGradientFromItsLastReaderToItsProducer) {
  const StageValues walk = walk_stage(value_costs(skip_mlp()), 0, 4, bytes);
  // h0's gradient arrives with h1's and is held beside layer 3's backward (h1's producer, whose
  // gradient of the h0 it reads is its own until the table adds it in), then beside layers 2 and
  // 1; layer 0 (its producer) takes it.
  EXPECT_EQ(walk.backward_held, (std::vector<double>{0.0, 16.0, 16.0, 16.0}));
}

}  // namespace
}  // namespace mpipe::plan
