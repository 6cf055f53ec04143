// move_peak_bytes: while layers move, a rank holds its chunks' old layers' state, their new layers'
// state and the tensors it receives for the layers it did not hold.
#include "train/layer_move.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/layer_spec.h"
#include "train/pipeline_plan.h"

namespace mpipe::train {
namespace {

model::LayerSpec layer(const std::string& kind, int64_t units) {
  if (units == 0) return testing::layer_spec(kind, {});
  return testing::layer_spec(kind, {{"units", units}});
}

// linear(64) relu linear(48) tanh linear(4) on [32], AdamW (2 floats per weight), K = 2.
config::Experiment five_layers() {
  config::Experiment e;
  e.source = "exp.yaml";
  e.model.layers = {layer("linear", 64), layer("relu", 0), layer("linear", 48), layer("tanh", 0),
                    layer("linear", 4)};
  e.train.batch_size = 16;
  e.pipeline.stages = 2;
  e.pipeline.micro_batches = 2;
  e.optimizer.kind = optim::OptimizerKind::kAdamW;
  e.pipeline.partition_mode = plan::PartitionMode::kManual;
  return e;
}

TEST(LayerMove, AStageHoldsItsOldAndNewStateAndWhatItReceives) {
  config::Experiment e = five_layers();
  const model::ModelPlan model = model::plan_model(e.model, Shape{32});
  e.pipeline.partition = {2, 3};
  const plan::PipelinePlan from = plan_experiment(e, model, 2, 1, 1);
  e.pipeline.partition = {4, 1};
  const plan::PipelinePlan to = plan_experiment(e, model, 2, 1, 1);

  const plan::Placement placement{.num_ranks = 2};
  const std::vector<double> peak = move_peak_bytes(from, to, placement, model, 2);
  ASSERT_EQ(peak.size(), 2u);
  // Stage 0 receives layer 2's weights and its two optimizer slots; stage 1 receives nothing.
  const double layer2 = static_cast<double>(model.layers[2].param_bytes);
  EXPECT_GT(layer2, 0.0);
  EXPECT_DOUBLE_EQ(peak[0],
                   from.stages[0].memory.state() + to.stages[0].memory.state() + 3 * layer2);
  EXPECT_DOUBLE_EQ(peak[1], from.stages[1].memory.state() + to.stages[1].memory.state());
  // The same partition moves nothing, and each stage holds its state twice (old and new).
  const std::vector<double> unmoved = move_peak_bytes(to, to, placement, model, 2);
  EXPECT_DOUBLE_EQ(unmoved[0], 2 * to.stages[0].memory.state());
}

TEST(LayerMove, ARankHoldsEveryChunksStateAndReceivesOnlyLayersNewToTheRank) {
  // Interleaved, K = 2, v = 2: rank 0 holds stages 0 and 2, rank 1 stages 1 and 3.
  config::Experiment e = five_layers();
  e.pipeline.schedule = plan::ScheduleKind::kInterleaved;
  e.pipeline.virtual_stages = 2;
  const model::ModelPlan model = model::plan_model(e.model, Shape{32});
  e.pipeline.partition = {1, 2, 1, 1};  // rank 0: layers 0 and 3; rank 1: 1, 2 and 4
  const plan::PipelinePlan from = plan_experiment(e, model, 2, 1, 1);
  e.pipeline.partition = {1, 1, 2, 1};  // rank 0: layers 0, 2 and 3; rank 1: 1 and 4
  const plan::PipelinePlan to = plan_experiment(e, model, 2, 1, 1);
  ASSERT_EQ(to.stages.size(), 4u);

  const plan::Placement placement{.num_ranks = 2, .virtual_stages = 2};
  const std::vector<double> peak = move_peak_bytes(from, to, placement, model, 2);
  ASSERT_EQ(peak.size(), 2u);
  auto state = [](const plan::PipelinePlan& plan, size_t s) {
    return plan.stages[s].memory.state();
  };
  // Rank 0 receives layer 2 (weights and two optimizer slots); rank 1 receives nothing, though
  // layer 2 left its stage 1 and tanh (layer 3) changed stage within rank 0.
  const double layer2 = static_cast<double>(model.layers[2].param_bytes);
  EXPECT_DOUBLE_EQ(peak[0],
                   state(from, 0) + state(from, 2) + state(to, 0) + state(to, 2) + 3 * layer2);
  EXPECT_DOUBLE_EQ(peak[1], state(from, 1) + state(from, 3) + state(to, 1) + state(to, 3));
}

}  // namespace
}  // namespace mpipe::train
