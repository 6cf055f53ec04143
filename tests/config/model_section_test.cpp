// Tests for the model section: layer entries, generic attributes with their sources, repeat
// expansion and the layer-list errors.
#include <gtest/gtest.h>

#include "experiment_file.h"

namespace mpipe::config {
namespace {

TEST(ModelSection, AttributesKeepTheirYamlTypes) {
  ExperimentFile file;
  const Experiment e = file.load(
      "model:\n"
      "  layers:\n"
      "    - type: conv2d\n"
      "      bias: false\n"
      "      channels: 16\n"
      "      p: 0.5\n"
      "      rate: 1e-3\n"
      "      init: kaiming\n"
      "      name: '5'\n"
      "      kernel: [3, 3]\n");
  ASSERT_EQ(e.model.layers.size(), 1u);
  const model::LayerSpec& layer = e.model.layers[0];
  EXPECT_EQ(layer.kind, "conv2d");
  EXPECT_EQ(layer.attrs.size(), 7u);
  EXPECT_EQ(std::get<bool>(layer.attrs.at("bias").value), false);
  EXPECT_EQ(std::get<int64_t>(layer.attrs.at("channels").value), 16);
  EXPECT_DOUBLE_EQ(std::get<double>(layer.attrs.at("p").value), 0.5);
  EXPECT_DOUBLE_EQ(std::get<double>(layer.attrs.at("rate").value), 1e-3);
  EXPECT_EQ(std::get<std::string>(layer.attrs.at("init").value), "kaiming");
  EXPECT_EQ(std::get<std::string>(layer.attrs.at("name").value), "5");
  EXPECT_EQ(std::get<std::vector<int64_t>>(layer.attrs.at("kernel").value),
            (std::vector<int64_t>{3, 3}));
}

TEST(ModelSection, LayersAndAttributesCarryFileLineAndKeyPath) {
  ExperimentFile file;
  const std::string path = file.write(
      "model:\n"
      "  layers:\n"
      "    - {type: linear, units: 256}\n"
      "    - type: relu\n"
      "    - type: linear\n"
      "      units: 10\n");
  const Experiment e = load_experiment(path, {});
  ASSERT_EQ(e.model.layers.size(), 3u);
  EXPECT_EQ(e.model.layers[0].where.prefix(), path + ":3: model.layers[0]");
  EXPECT_EQ(e.model.layers[0].attrs.at("units").where.prefix(), path + ":3: model.layers[0].units");
  EXPECT_EQ(e.model.layers[2].where.prefix(), path + ":5: model.layers[2]");
  EXPECT_EQ(e.model.layers[2].attrs.at("units").where.prefix(), path + ":6: model.layers[2].units");
  EXPECT_EQ(e.model.where.prefix(), path + ":2: model");
}

TEST(ModelSection, RepeatBlocksExpandInPlaceWithFlattenedIndicesAndOriginalLines) {
  ExperimentFile file;
  const std::string path = file.write(
      "model:\n"
      "  layers:\n"
      "    - {type: embed}\n"
      "    - repeat: 2\n"
      "      layers:\n"
      "        - {type: linear, units: 8}\n"
      "        - repeat: 2\n"
      "          layers: [{type: relu}]\n"
      "    - {type: head}\n");
  const Experiment e = load_experiment(path, {});
  std::vector<std::string> kinds;
  for (const auto& layer : e.model.layers) kinds.push_back(layer.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"embed", "linear", "relu", "relu", "linear", "relu",
                                             "relu", "head"}));
  EXPECT_EQ(e.model.layers[4].where.prefix(), path + ":6: model.layers[4]");
  EXPECT_EQ(e.model.layers[4].attrs.at("units").where.prefix(), path + ":6: model.layers[4].units");
  EXPECT_EQ(e.model.layers[6].where.prefix(), path + ":8: model.layers[6]");
  EXPECT_EQ(e.model.layers[7].where.prefix(), path + ":9: model.layers[7]");
}

TEST(ModelSection, LayersAreRequired) {
  EXPECT_EQ(ExperimentFile().error("model:\n  loss: mse\n"),
            "exp.yaml:2: model.layers: required key is missing");
  EXPECT_EQ(ExperimentFile().error("train:\n  steps: 3\n"),
            "exp.yaml: model.layers: required key is missing");
}

TEST(ModelSection, LossMustBeCrossEntropyOrMse) {
  EXPECT_EQ(ExperimentFile().error("model:\n  loss: hinge\n  layers: [{type: relu}]\n"),
            "exp.yaml:2: model.loss: expected one of cross_entropy, mse, got 'hinge'");
}

TEST(ModelSection, LabelSmoothingIsAFractionOfCrossEntropysTargets) {
  ExperimentFile file;
  EXPECT_EQ(file.load("model:\n  layers: [{type: relu}]\n").model.label_smoothing, 0.0);
  EXPECT_EQ(
      file.load("model:\n  label_smoothing: 0.1\n  layers: [{type: relu}]\n").model.label_smoothing,
      0.1);
  EXPECT_EQ(ExperimentFile().error("model:\n  label_smoothing: 1\n  layers: [{type: relu}]\n"),
            "exp.yaml:2: model.label_smoothing: must be in [0, 1), got 1");
  EXPECT_EQ(ExperimentFile().error(
                "model:\n  loss: mse\n  label_smoothing: 0.2\n  layers: [{type: relu}]\n"),
            "exp.yaml:3: model.label_smoothing: smooths cross_entropy's targets; the loss is mse");
}

TEST(ModelSection, UnknownKeyListsTheKnownKeys) {
  EXPECT_EQ(
      ExperimentFile().error("model:\n  layers: [{type: relu}]\n  optimizer: sgd\n"),
      "exp.yaml:3: model.optimizer: unknown key (known: loss, label_smoothing, init, layers)");
}

TEST(ModelSection, InitIsReadAndDefaultsToEachLayersOwn) {
  ExperimentFile file;
  EXPECT_EQ(file.load("model:\n  layers: [{type: relu}]\n").model.init, model::ModelInit::kDefault);
  EXPECT_EQ(file.load("model:\n  init: gpt2\n  layers: [{type: relu}]\n").model.init,
            model::ModelInit::kGpt2);
}

TEST(ModelSection, InitIsDefaultOrGpt2) {
  EXPECT_EQ(ExperimentFile().error("model:\n  init: xavier\n  layers: [{type: relu}]\n"),
            "exp.yaml:2: model.init: expected one of default, gpt2, got 'xavier'");
}

TEST(ModelSection, LayersMustBeANonEmptyList) {
  EXPECT_EQ(ExperimentFile().error("model:\n  layers: relu\n"),
            "exp.yaml:2: model.layers: expected a list of layers, got 'relu'");
  EXPECT_EQ(ExperimentFile().error("model:\n  layers: []\n"),
            "exp.yaml:2: model.layers: must not be an empty list");
}

TEST(ModelSection, LayerEntryMustBeAMap) {
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {type: relu}\n    - relu\n"),
            "exp.yaml:4: model.layers[1]: expected a map with a 'type' or a 'repeat' key, got "
            "'relu'");
}

TEST(ModelSection, LayerEntryNeedsANonEmptyType) {
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {units: 3}\n"),
            "exp.yaml:3: model.layers[0].type: required key is missing");
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {type: ''}\n"),
            "exp.yaml:3: model.layers[0].type: must not be empty");
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {type: [a]}\n"),
            "exp.yaml:3: model.layers[0].type: expected a string, got a list");
}

TEST(ModelSection, AttributeMustBeAScalarOrAListOfIntegers) {
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - type: relu\n      opts: {a: 1}\n"),
            "exp.yaml:4: model.layers[0].opts: expected a scalar or a list of integers, got a map");
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {type: conv, kernel: [3, a]}\n"),
            "exp.yaml:3: model.layers[0].kernel[1]: expected an integer, got 'a'");
}

TEST(ModelSection, RepeatCountMustBeAtLeastOne) {
  EXPECT_EQ(ExperimentFile().error(
                "model:\n  layers:\n    - {type: a}\n    - repeat: 0\n      layers: [{type: b}]\n"),
            "exp.yaml:4: model.layers[1].repeat: must be >= 1, got 0");
}

TEST(ModelSection, RepeatBlockNeedsLayersAndNoOtherKeys) {
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {repeat: 2}\n"),
            "exp.yaml:3: model.layers[0].layers: required key is missing");
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {repeat: 2, type: a, layers: []}\n"),
            "exp.yaml:3: model.layers[0].type: unknown key (known: repeat, layers)");
}

TEST(ModelSection, ErrorsInsideARepeatNameTheFlattenedIndex) {
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - repeat: 3\n      layers:\n"
                                   "        - {type: a}\n        - {units: 4}\n"),
            "exp.yaml:6: model.layers[1].type: required key is missing");
}

TEST(ModelSection, RunawayRepeatIsRejected) {
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - repeat: 1000000000\n"
                                   "      layers: [{type: a}]\n"),
            "exp.yaml:3: model.layers[0].repeat: expands the model to more than 100000 layers");
}

TEST(ModelSection, SaveReadAndInputAreTheGraphsEdgesNotAttributes) {
  ExperimentFile file;
  const std::string path = file.write(
      "model:\n"
      "  layers:\n"
      "    - {type: linear, units: 8, save: skip0}\n"
      "    - type: relu\n"
      "    - type: add\n"
      "      read: [skip0, other_1]\n"
      "    - {type: linear, units: 8, input: skip0}\n");
  const Experiment e = load_experiment(path, {});
  ASSERT_EQ(e.model.layers.size(), 4u);
  const model::LayerSpec& saver = e.model.layers[0];
  EXPECT_EQ(saver.attrs.size(), 1u);  // units only
  ASSERT_TRUE(saver.save.has_value());
  EXPECT_EQ(saver.save->name, "skip0");
  EXPECT_EQ(saver.save->where.prefix(), path + ":3: model.layers[0].save");
  const model::LayerSpec& add = e.model.layers[2];
  EXPECT_TRUE(add.attrs.empty());
  ASSERT_EQ(add.reads.size(), 2u);
  EXPECT_EQ(add.reads[1].name, "other_1");
  EXPECT_EQ(add.reads[1].where.prefix(), path + ":6: model.layers[2].read[1]");
  ASSERT_TRUE(e.model.layers[3].input.has_value());
  EXPECT_EQ(e.model.layers[3].input->name, "skip0");
  EXPECT_FALSE(e.model.layers[1].has_edges());
}

TEST(ModelSection, ValueNamesAreIdentifiersAndReadIsANonEmptyList) {
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {type: relu, save: 2x}\n"),
            "exp.yaml:3: model.layers[0].save: expected a value name (a letter, then letters, "
            "digits or '_'), got '2x'");
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {type: add, read: skip}\n"),
            "exp.yaml:3: model.layers[0].read: expected a list of value names, got 'skip'");
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {type: add, read: []}\n"),
            "exp.yaml:3: model.layers[0].read: must not be an empty list");
  EXPECT_EQ(ExperimentFile().error("model:\n  layers:\n    - {type: relu, input: [a]}\n"),
            "exp.yaml:3: model.layers[0].input: expected a value name (a letter, then letters, "
            "digits or '_'), got a list");
}

}  // namespace
}  // namespace mpipe::config
