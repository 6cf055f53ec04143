// Tests for finding the layers tied to the first embedding (`tie: embedding`): the tie of a
// fitting model (a head; a group of three uses), and each refused model with its exact one-line
// error naming the tie's file, line and key.
#include "model/tied_weights.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/model_builder.h"

namespace mpipe::model {
namespace {

// Layer `index` of exp.yaml, on line 10 + index, each attribute on the same line.
LayerSpec layer(int index, std::string kind, std::vector<std::pair<std::string, AttrValue>> attrs) {
  const std::string path = fmt::format("model.layers[{}]", index);
  LayerSpec spec{.kind = std::move(kind), .attrs = {}, .where = {"exp.yaml", 10 + index, path}};
  for (auto& [key, value] : attrs) {
    spec.attrs[key] = {.value = std::move(value),
                       .where = {"exp.yaml", 10 + index, path + "." + key}};
  }
  return spec;
}

ModelSpec model_of(std::vector<LayerSpec> layers) {
  ModelSpec spec;
  spec.layers = std::move(layers);
  spec.where = {"exp.yaml", 2, "model"};
  return spec;
}

LayerSpec embedding(int index, int64_t vocab, int64_t dim) {
  return layer(index, "embedding", {{"vocab", vocab}, {"dim", dim}});
}

LayerSpec tied_head(int index, int64_t units) {
  return layer(index, "linear",
               {{"units", units}, {"bias", false}, {"tie", std::string("embedding")}});
}

// The error of planning `spec` on 8 token ids ("" when it plans).
std::string refusal(const ModelSpec& spec) {
  try {
    plan_model(spec, Shape{8});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TiedWeights, FindsTheHeadThatTiesToTheFirstEmbedding) {
  const ModelSpec spec = model_of({embedding(0, 32, 16), layer(1, "layer_norm", {}),
                                   layer(2, "linear", {{"units", int64_t{16}}}), tied_head(3, 32)});
  const ModelPlan plan = plan_model(spec, Shape{8});
  ASSERT_TRUE(plan.tied.has_value());
  EXPECT_EQ(*plan.tied, (TiedWeights{.embedding = 0,
                                     .copies = {{.layer = 3, .param = "weight"}},
                                     .matrix = Shape{32, 16}}));
  // The model's parameter count holds the tied matrix [32, 16] once; the head's row still has it.
  int64_t sum = 0;
  for (const LayerPlan& layer : plan.layers) sum += layer.num_params;
  EXPECT_EQ(plan.layers[3].num_params, 32 * 16);
  EXPECT_EQ(plan.num_params(), sum - 32 * 16);
}

TEST(TiedWeights, NoTieWithoutTheKey) {
  const ModelSpec spec =
      model_of({embedding(0, 32, 16), layer(1, "linear", {{"units", int64_t{32}}})});
  EXPECT_FALSE(plan_model(spec, Shape{8}).tied.has_value());
}

TEST(TiedWeights, RefusesATieWithoutAnEmbedding) {
  const ModelSpec spec = model_of({layer(0, "linear", {{"units", int64_t{16}}}), tied_head(1, 32)});
  EXPECT_EQ(refusal(spec),
            "exp.yaml:11: model.layers[1].tie: ties the weight to an embedding, but no embedding "
            "layer comes before it");
}

TEST(TiedWeights, RefusesUnitsOtherThanTheVocabulary) {
  const ModelSpec spec = model_of({embedding(0, 32, 16), tied_head(1, 31)});
  EXPECT_EQ(refusal(spec),
            "exp.yaml:11: model.layers[1].tie: a tied linear needs units equal to the embedding's "
            "vocab (32, model.layers[0]), got 31");
}

TEST(TiedWeights, RefusesAnInputWidthOtherThanTheEmbeddingsDim) {
  const ModelSpec spec = model_of(
      {embedding(0, 32, 16), layer(1, "linear", {{"units", int64_t{12}}}), tied_head(2, 32)});
  EXPECT_EQ(refusal(spec),
            "exp.yaml:12: model.layers[2].tie: a tied linear needs an input width equal to the "
            "embedding's dim (16, model.layers[0]), got 12");
}

// Two data inputs of 8 token ids each: the source (the first embedding's) and the target.
const ModelInputs kTwoInputs = {{.name = "source", .shape = Shape{8}},
                                {.name = "target_in", .shape = Shape{8}}};

// An encoder-decoder's three uses: the source embedding (saved), the target embedding tied to it
// (vocab and dim given) and projected to the source's dim, the sum of both, and the head tied to
// it.
ModelSpec three_uses(int64_t vocab, int64_t dim) {
  LayerSpec source = embedding(0, 32, 16);
  source.input = ValueRef{.name = "source", .where = source.where};
  source.save = ValueRef{.name = "x", .where = source.where};
  LayerSpec target =
      layer(1, "embedding", {{"vocab", vocab}, {"dim", dim}, {"tie", std::string("embedding")}});
  target.input = ValueRef{.name = "target_in", .where = target.where};
  LayerSpec add = layer(3, "add", {});
  add.reads = {ValueRef{.name = "x", .where = add.where}};
  return model_of(
      {source, target, layer(2, "linear", {{"units", int64_t{16}}}), add, tied_head(4, 32)});
}

std::string refusal_of_two_inputs(const ModelSpec& spec) {
  try {
    plan_model(spec, kTwoInputs);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TiedWeights, FindsAGroupOfThreeUsesInLayerOrder) {
  const ModelPlan plan = plan_model(three_uses(32, 16), kTwoInputs);
  ASSERT_TRUE(plan.tied.has_value());
  EXPECT_EQ(
      *plan.tied,
      (TiedWeights{.embedding = 0,
                   .copies = {{.layer = 1, .param = "token"}, {.layer = 4, .param = "weight"}},
                   .matrix = Shape{32, 16}}));
  EXPECT_EQ(plan.tied->uses().front(), (TiedUse{.layer = 0, .param = "token"}));
  EXPECT_TRUE(plan.tied->is_copy(1, "token"));
  EXPECT_FALSE(plan.tied->is_copy(1, "position"));
  EXPECT_FALSE(plan.tied->is_copy(0, "token"));
  // The parameter count holds the matrix [32, 16] once, not three times.
  int64_t sum = 0;
  for (const LayerPlan& layer : plan.layers) sum += layer.num_params;
  EXPECT_EQ(plan.num_params(), sum - 2 * 32 * 16);
}

TEST(TiedWeights, RefusesATiedEmbeddingOfAnotherVocabulary) {
  EXPECT_EQ(refusal_of_two_inputs(three_uses(31, 16)),
            "exp.yaml:11: model.layers[1].tie: a tied embedding needs the first embedding's "
            "vocab (32, model.layers[0]), got 31");
}

TEST(TiedWeights, RefusesATiedEmbeddingOfAnotherDim) {
  EXPECT_EQ(refusal_of_two_inputs(three_uses(32, 8)),
            "exp.yaml:11: model.layers[1].tie: a tied embedding needs the first embedding's "
            "dim (16, model.layers[0]), got 8");
}

TEST(TiedWeights, RefusesATieOnTheFirstEmbedding) {
  LayerSpec first = embedding(0, 32, 16);
  first.attrs["tie"] = {.value = std::string("embedding"),
                        .where = {"exp.yaml", 10, "model.layers[0].tie"}};
  EXPECT_EQ(refusal(model_of({first, tied_head(1, 32)})),
            "exp.yaml:10: model.layers[0].tie: the first embedding holds the tied matrix; tie "
            "later embeddings and linears to it");
}

TEST(TiedWeights, RefusesAnotherValue) {
  const ModelSpec spec =
      model_of({embedding(0, 32, 16),
                layer(1, "linear", {{"units", int64_t{32}}, {"tie", std::string("head")}})});
  EXPECT_EQ(refusal(spec),
            "exp.yaml:11: model.layers[1].tie: must be one of embedding, got 'head'");
}

TEST(TiedWeights, RefusesTheKeyOnAnotherLayerKind) {
  const ModelSpec spec =
      model_of({embedding(0, 32, 16), layer(1, "layer_norm", {{"tie", std::string("embedding")}})});
  EXPECT_EQ(refusal(spec),
            "exp.yaml:11: model.layers[1].tie: unknown key for layer 'layer_norm' (known: eps)");
}

}  // namespace
}  // namespace mpipe::model
