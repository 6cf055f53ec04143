// Tests for compare_settings: what a resumed run may change and what it may not.
#include "checkpoint/resume_settings.h"

#include <gtest/gtest.h>

namespace mpipe::checkpoint {
namespace {

Settings base() {
  return {{"train.steps", "100"},
          {"train.seed", "1"},
          {"train.batch_size", "64"},
          {"train.eval_every", "0"},
          {"train.precision", "f32"},
          {"optimizer.lr", "0.001"},
          {"optimizer.kind", "adam"},
          {"data.path", "/data/a"},
          {"log.every", "10"},
          {"checkpoint.every", "50"},
          {"pipeline.stages", "2"},
          {"pipeline.data_parallel", "1"},
          {"pipeline.micro_batches", "4"},
          {"pipeline.schedule", "gpipe"},
          {"pipeline.partition", "uniform"},
          {"pipeline.memory_limit", "none"},
          {kGlobalMicroBatchesKey, "4"},
          {"model.layers[0].type", "linear"},
          {"model.layers[0].units", "64"}};
}

Settings with(Settings settings, const std::map<std::string, std::string>& changes) {
  for (const auto& [key, value] : changes) settings[key] = value;
  return settings;
}

TEST(CompareSettings, SameSettingsHaveNoChanges) {
  const SettingChanges changes = compare_settings(base(), base());
  EXPECT_TRUE(changes.refused.empty());
  EXPECT_TRUE(changes.allowed.empty());
}

TEST(CompareSettings, StepsEvaluationLoggingAndCheckpointCadenceMayChange) {
  const SettingChanges changes =
      compare_settings(base(), with(base(), {{"train.steps", "200"},
                                             {"train.eval_every", "10"},
                                             {"log.every", "1"},
                                             {"checkpoint.every", "5"}}));
  EXPECT_TRUE(changes.refused.empty());
  EXPECT_EQ(changes.allowed,
            (std::vector<std::string>{"checkpoint.every: 50 → 5", "log.every: 10 → 1",
                                      "train.eval_every: 0 → 10", "train.steps: 100 → 200"}));
}

TEST(CompareSettings, TheScheduleLengthMayChange) {
  // How the learning-rate schedule goes on past a changed train.steps is said with it.
  const SettingChanges changes = compare_settings(
      with(base(), {{"optimizer.schedule.total_steps", "100"}}),
      with(base(), {{"train.steps", "200"}, {"optimizer.schedule.total_steps", "200"}}));
  EXPECT_TRUE(changes.refused.empty());
  EXPECT_EQ(changes.allowed, (std::vector<std::string>{"optimizer.schedule.total_steps: 100 → 200",
                                                       "train.steps: 100 → 200"}));
}

TEST(CompareSettings, PipelineLayoutMayChangeWithTheSameGlobalMicroBatches) {
  const SettingChanges changes =
      compare_settings(base(), with(base(), {{"pipeline.stages", "1"},
                                             {"pipeline.data_parallel", "2"},
                                             {"pipeline.micro_batches", "2"},
                                             {"pipeline.schedule", "1f1b"},
                                             {"pipeline.partition", "[2, 4]"},
                                             {"pipeline.memory_limit", "1073741824"}}));
  EXPECT_TRUE(changes.refused.empty());
  EXPECT_EQ(changes.allowed.size(), 6u);
}

// The weight gradients' resolved choice (a resume that sets weight_grads changes it) is a layout.
TEST(CompareSettings, TheResolvedWeightGradsMayChange) {
  const SettingChanges changes = compare_settings(
      with(base(), {{kResolvedWeightGradsKey, "grouped"}, {kResolvedWeightGroupKey, "4"}}),
      with(base(), {{kResolvedWeightGradsKey, "grouped"}, {kResolvedWeightGroupKey, "2"}}));
  EXPECT_TRUE(changes.refused.empty());
  EXPECT_EQ(changes.allowed, std::vector<std::string>{"pipeline.resolved_weight_group: 4 → 2"});
}

TEST(CompareSettings, OtherGlobalMicroBatchesAreRefused) {
  const SettingChanges changes = compare_settings(
      base(), with(base(), {{"pipeline.micro_batches", "8"}, {kGlobalMicroBatchesKey, "8"}}));
  EXPECT_EQ(changes.refused,
            std::vector<std::string>{"pipeline.micro_batches × data_parallel: 4 → 8"});
}

TEST(CompareSettings, WhatTheMathematicsDependsOnIsRefusedEachListed) {
  const SettingChanges changes =
      compare_settings(base(), with(base(), {{"optimizer.lr", "0.01"},
                                             {"train.seed", "2"},
                                             {"train.batch_size", "128"},
                                             {"optimizer.kind", "sgd"},
                                             {"train.precision", "bf16"},
                                             {"data.path", "/data/b"},
                                             {"model.layers[0].units", "128"},
                                             {"train.steps", "200"}}));
  EXPECT_EQ(changes.refused,
            (std::vector<std::string>{
                "data.path: /data/a → /data/b", "model.layers[0].units: 64 → 128",
                "optimizer.kind: adam → sgd", "optimizer.lr: 0.001 → 0.01",
                "train.batch_size: 64 → 128", "train.precision: f32 → bf16", "train.seed: 1 → 2"}));
  EXPECT_EQ(changes.allowed, std::vector<std::string>{"train.steps: 100 → 200"});
}

TEST(CompareSettings, LayerOrLayerAttributeAddedOrRemovedIsRefused) {
  Settings now = with(base(), {{"model.layers[1].type", "relu"}, {"model.layers[0].bias", "true"}});
  EXPECT_EQ(compare_settings(base(), now).refused,
            (std::vector<std::string>{"model.layers[0].bias: (none) → true",
                                      "model.layers[1].type: (none) → relu"}));
  EXPECT_EQ(compare_settings(now, base()).refused,
            (std::vector<std::string>{"model.layers[0].bias: true → (none)",
                                      "model.layers[1].type: relu → (none)"}));
}

TEST(CompareSettings, KeyKnownToOnlyOneVersionOutsideTheModelIsIgnored) {
  Settings now = with(base(), {{"train.on_nonfinite", "stop"}});
  const Settings saved = with(base(), {{"optimizer.retired_key", "1"}});
  const SettingChanges changes = compare_settings(saved, now);
  EXPECT_TRUE(changes.refused.empty());
  EXPECT_TRUE(changes.allowed.empty());
}

}  // namespace
}  // namespace mpipe::checkpoint
