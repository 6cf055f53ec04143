// Tests for the model/data contract: each mismatch of a model with its data is refused before
// anything runs, with the model key at fault, its file and line.
#include "train/data_contract.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace mpipe::train {
namespace {

// Layer `index` of exp.yaml, on line 10 + index, each attribute on the same line.
model::LayerSpec layer(int index, std::string kind, std::map<std::string, int64_t> attrs = {}) {
  const std::string path = fmt::format("model.layers[{}]", index);
  model::LayerSpec spec{
      .kind = std::move(kind), .attrs = {}, .where = {"exp.yaml", 10 + index, path}};
  for (const auto& [key, value] : attrs) {
    spec.attrs[key] = {.value = value, .where = {"exp.yaml", 10 + index, path + "." + key}};
  }
  return spec;
}

model::ModelSpec model_of(std::vector<model::LayerSpec> layers,
                          std::string loss = "cross_entropy") {
  model::ModelSpec spec;
  spec.layers = std::move(layers);
  spec.loss = std::move(loss);
  spec.loss_where = {"exp.yaml", 2, "model.loss"};
  spec.where = {"exp.yaml", 2, "model"};
  return spec;
}

// Data with one input (data::kMainInputName) of shape `input` and vocabulary `vocab`.
std::vector<data::DataInput> one_input(const Shape& input, int64_t vocab) {
  return {{.name = data::kMainInputName, .shape = input, .vocab = vocab}};
}

const data::DataSchema kImages{
    .name = "fashion_mnist", .inputs = one_input(Shape{784}, 0), .target = Shape{}, .classes = 10};
const data::DataSchema kText{
    .name = "text", .inputs = one_input(Shape{8}, 256), .target = Shape{8}, .classes = 256};
const data::DataSchema kRegression{
    .name = "synthetic", .inputs = one_input(Shape{16}, 0), .target = Shape{1}, .classes = 0};

// The contract's error for `spec` on `data` ("" when it fits).
std::string mismatch(const model::ModelSpec& spec, const data::DataSchema& data) {
  try {
    model::ModelInputs inputs;
    for (const data::DataInput& input : data.inputs) inputs.push_back({input.name, input.shape});
    check_model_fits_data(spec, model::plan_model(spec, inputs), data);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A character model: embedding, one block, a head of `head` units.
model::ModelSpec char_model(int64_t vocab, int64_t head) {
  return model_of({layer(0, "embedding", {{"vocab", vocab}, {"dim", 16}}),
                   layer(1, "transformer_block", {{"heads", 2}}), layer(2, "layer_norm"),
                   layer(3, "linear", {{"units", head}})});
}

TEST(DataContract, MatchingModelsFit) {
  EXPECT_EQ(mismatch(model_of({layer(0, "linear", {{"units", 10}})}), kImages), "");
  EXPECT_EQ(mismatch(char_model(256, 256), kText), "");
  EXPECT_EQ(mismatch(char_model(300, 256), kText), "");  // unused embedding rows do no harm
  EXPECT_EQ(mismatch(model_of({layer(0, "linear", {{"units", 1}})}, "mse"), kRegression), "");
}

TEST(DataContract, LastLayerNarrowerThanTheClasses) {
  EXPECT_EQ(mismatch(model_of({layer(0, "linear", {{"units", 64}}), layer(1, "relu"),
                               layer(2, "linear", {{"units", 7}})}),
                     kImages),
            "exp.yaml:12: model.layers[2] (linear): outputs 7 classes, but the data "
            "(fashion_mnist) has 10");
}

TEST(DataContract, HeadWiderThanTheVocabulary) {
  // It trained, then sampled byte 300 at the end of the run.
  EXPECT_EQ(mismatch(char_model(256, 300), kText),
            "exp.yaml:13: model.layers[3] (linear): outputs 300 classes, but the data (text) has "
            "256");
}

TEST(DataContract, OutputNotAScorePerClassForEachTarget) {
  // A flat output for a sequence of targets.
  EXPECT_EQ(mismatch(model_of({layer(0, "flatten"), layer(1, "linear", {{"units", 256}})}), kText),
            "exp.yaml:11: model.layers[1] (linear): outputs [256] per example, but cross_entropy "
            "on the data (text) needs [8, 256]: a score for each of its 256 classes per target");
}

TEST(DataContract, MseOnClassLabels) {
  EXPECT_EQ(mismatch(model_of({layer(0, "linear", {{"units", 10}})}, "mse"), kImages),
            "exp.yaml:2: model.loss: mse needs real-valued targets, but the data (fashion_mnist) "
            "has class labels (10 classes); use cross_entropy");
}

TEST(DataContract, CrossEntropyOnRealValues) {
  EXPECT_EQ(mismatch(model_of({layer(0, "linear", {{"units", 1}})}), kRegression),
            "exp.yaml:2: model.loss: cross_entropy needs class labels, but the data (synthetic) "
            "has real-valued targets; use mse");
}

TEST(DataContract, MseOutputOfAnotherSize) {
  EXPECT_EQ(mismatch(model_of({layer(0, "linear", {{"units", 3}})}, "mse"), kRegression),
            "exp.yaml:10: model.layers[0] (linear): outputs 3 values per example, but the data's "
            "(synthetic) targets have 1");
}

TEST(DataContract, MseOnImagesNeedsAnOutputOfTheImagesShape) {
  const data::DataSchema denoise{.name = "fashion_mnist",
                                 .inputs = one_input(Shape{1, 4, 4}, 0),
                                 .target = Shape{1, 4, 4},
                                 .classes = 0};
  const auto conv = [](int64_t channels) {
    return layer(0, "conv2d", {{"channels", channels}, {"kernel", 3}, {"padding", 1}});
  };
  EXPECT_EQ(mismatch(model_of({conv(1)}, "mse"), denoise), "");
  // As many values, in another shape: its pixels would be compared with others.
  EXPECT_EQ(mismatch(model_of({conv(1), layer(1, "flatten")}, "mse"), denoise),
            "exp.yaml:11: model.layers[1] (flatten): outputs [16] per example, but the data's "
            "(fashion_mnist) targets are [1, 4, 4]");
  EXPECT_EQ(mismatch(model_of({conv(2)}, "mse"), denoise),
            "exp.yaml:10: model.layers[0] (conv2d): outputs 32 values per example, but the data's "
            "(fashion_mnist) targets have 16");
}

TEST(DataContract, EmbeddingVocabularySmallerThanTheData) {
  EXPECT_EQ(mismatch(char_model(100, 256), kText),
            "exp.yaml:10: model.layers[0].vocab: 100 is smaller than the data's vocabulary of "
            "256 token ids (text)");
}

TEST(DataContract, EmbeddingOfRealValues) {
  const data::DataSchema sequences{
      .name = "synthetic", .inputs = one_input(Shape{8}, 0), .target = Shape{}, .classes = 4};
  EXPECT_EQ(mismatch(model_of({layer(0, "embedding", {{"vocab", 4}, {"dim", 8}}),
                               layer(1, "flatten"), layer(2, "linear", {{"units", 4}})}),
                     sequences),
            "exp.yaml:10: model.layers[0] (embedding): takes token ids, but the data (synthetic) "
            "provides real values");
}

TEST(DataContract, EmbeddingAfterTheFirstLayer) {
  EXPECT_EQ(mismatch(model_of({layer(0, "linear", {{"units", 8}}),
                               layer(1, "embedding", {{"vocab", 256}, {"dim", 4}}),
                               layer(2, "flatten"), layer(3, "linear", {{"units", 10}})}),
                     kImages),
            "exp.yaml:11: model.layers[1] (embedding): takes token ids, which only the data "
            "provides; it must be the model's first layer, or name a data input with `input:`");
}

}  // namespace
}  // namespace mpipe::train
