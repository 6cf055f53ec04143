// Tests for --set overrides: applied before validation, including list and map values, and
// their error messages.
#include <gtest/gtest.h>

#include "experiment_file.h"

namespace mpipe::config {
namespace {

const std::string kBase = "pipeline:\n  stages: 1\n" + kModel;

TEST(Overrides, ReplaceValuesFromTheFile) {
  const Experiment e =
      ExperimentFile().load(kBase, {"pipeline.stages=4", "optimizer.lr=0.01", "train.steps=7"});
  EXPECT_EQ(e.pipeline.stages, 4);
  EXPECT_DOUBLE_EQ(e.optimizer.lr, 0.01);
  EXPECT_EQ(e.train.steps, 7);
}

TEST(Overrides, AcceptListValues) {
  const Experiment e =
      ExperimentFile().load(kBase, {"pipeline.stages=2", "pipeline.partition=[2,2]"});
  EXPECT_EQ(e.pipeline.partition, (std::vector<int>{2, 2}));
}

TEST(Overrides, CreateMissingSectionsAndNestedMaps) {
  const Experiment e = ExperimentFile().load(kModel, {"optimizer.schedule.kind=cosine"});
  EXPECT_EQ(e.optimizer.schedule.kind, optim::LrScheduleKind::kCosine);
}

TEST(Overrides, LaterOverridesWin) {
  const Experiment e = ExperimentFile().load(kBase, {"train.steps=7", "train.steps=9"});
  EXPECT_EQ(e.train.steps, 9);
}

TEST(Overrides, CanReplaceTheLayerListWithSourcesNamingSet) {
  const Experiment e = ExperimentFile().load(kBase, {"model.layers=[{type: linear, units: 4}]"});
  ASSERT_EQ(e.model.layers.size(), 1u);
  EXPECT_EQ(e.model.layers[0].kind, "linear");
  EXPECT_EQ(e.model.layers[0].attrs.at("units").where.file, "--set");
  EXPECT_EQ(e.model.layers[0].attrs.at("units").where.line, 0);
  EXPECT_EQ(e.model.layers[0].attrs.at("units").where.path, "model.layers[0].units");
}

TEST(Overrides, WorkOnAnEmptyFile) {
  const Experiment e = ExperimentFile().load("", {"model.layers=[{type: relu}]"});
  EXPECT_EQ(e.model.layers.size(), 1u);
}

TEST(Overrides, AreValidatedLikeFileValues) {
  EXPECT_EQ(ExperimentFile().error(kBase, {"pipeline.stages=0"}),
            "--set pipeline.stages: must be >= 1 or 'auto', got 0");
  EXPECT_EQ(ExperimentFile().error(kBase, {"optimizer.lr=abc"}),
            "--set optimizer.lr: expected a number, got 'abc'");
}

TEST(Overrides, OfAnUnknownKeyNameIt) {
  EXPECT_EQ(ExperimentFile().error(kBase, {"pipeline.stagez=4"}),
            "--set pipeline.stagez: unknown key (known: stages, data_parallel, micro_batches, "
            "virtual_stages, schedule, recompute, weight_grads, weight_group, partition, "
            "memory_limit, balance, balance_after, balance_every, balance_moves)");
  EXPECT_EQ(ExperimentFile().error(kBase, {"pipe.stages=4"}),
            "--set pipe: unknown key (known: model, data, train, optimizer, pipeline, "
            "checkpoint, log, comm)");
}

TEST(Overrides, CrossSectionErrorNamesSetWhenTheBatchSizeWasOverridden) {
  EXPECT_EQ(ExperimentFile().error(kBase, {"train.batch_size=10", "pipeline.micro_batches=4"}),
            "--set train.batch_size: must be divisible by pipeline.micro_batches x "
            "data-parallel replicas = 4 x 1 = 4, got 10");
}

TEST(Overrides, FileValuesNextToAnOverrideKeepTheirLines) {
  EXPECT_EQ(ExperimentFile().error("train:\n  steps: -1\n" + kModel, {"train.seed=3"}),
            "exp.yaml:2: train.steps: must be >= 0, got -1");
}

TEST(Overrides, WithoutEqualsSignIsMalformed) {
  EXPECT_EQ(ExperimentFile().error(kBase, {"pipeline.stages"}),
            "--set 'pipeline.stages': expected key.path=value");
  EXPECT_EQ(ExperimentFile().error(kBase, {"pipeline..stages=2"}),
            "--set 'pipeline..stages=2': expected key.path=value");
  EXPECT_EQ(ExperimentFile().error(kBase, {"=2"}), "--set '=2': expected key.path=value");
}

TEST(Overrides, ReachAnItemOfAListByItsIndex) {
  const std::string layers =
      "model:\n  layers:\n    - {type: linear, units: 8}\n    - {type: relu}\n";
  const Experiment e = ExperimentFile().load(layers, {"model.layers[0].units=5"});
  EXPECT_EQ(e.model.layers[0].attrs.at("units").where.file, "--set");
  EXPECT_EQ(e.model.layers[0].attrs.at("units").where.path, "model.layers[0].units");
  EXPECT_EQ(e.model.layers[1].kind, "relu");
  EXPECT_EQ(ExperimentFile().load(layers, {"model.layers[1]={type: tanh}"}).model.layers[1].kind,
            "tanh");
  EXPECT_EQ(ExperimentFile().error(layers, {"model.layers[2].units=5"}),
            "--set model.layers[2].units: model.layers has 2 item(s), counted from 0");
  EXPECT_EQ(ExperimentFile().error(layers, {"model[0].x=5"}),
            "--set model[0].x: model is not a list");
  EXPECT_EQ(ExperimentFile().error(layers, {"model.layers[x].units=5"}),
            "--set 'model.layers[x].units=5': expected a list index such as [0] after "
            "model.layers");
  EXPECT_EQ(ExperimentFile().error(layers, {"model.layers[0]units=5"}),
            "--set 'model.layers[0]units=5': expected key.path=value");
}

TEST(Overrides, OfAKeyWithOtherCharactersSayItIsUnknown) {
  EXPECT_EQ(ExperimentFile().error(kBase, {"tr\u00e0in.steps=3"}),
            "--set tr\u00e0in: unknown key (known: model, data, train, optimizer, pipeline, "
            "checkpoint, log, comm)");
}

TEST(Overrides, WithInvalidYamlValueIsRejected) {
  EXPECT_EQ(ExperimentFile().error(kBase, {"pipeline.partition=[1, 2"}),
            "--set pipeline.partition: invalid YAML value: end of sequence flow not found");
}

TEST(Overrides, ThroughANonMapValueIsRejected) {
  EXPECT_EQ(ExperimentFile().error(kBase, {"pipeline.stages.x=1"}),
            "--set pipeline.stages.x: pipeline.stages is not a map");
}

}  // namespace
}  // namespace mpipe::config
