// Tests for the layer options: one owner of each attribute's default and bounds, which the layer
// factory and the cost model both read.
#include "model/layer_options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"
#include "model/cost_model.h"
#include "model/layer_factory.h"
#include "model/model_builder.h"
#include "support/input_error_of.h"
#include "support/layer_spec.h"

namespace mpipe::model {
namespace {

TEST(LayerOptions, DefaultsApplyToMissingAttributes) {
  const LayerSpec spec = testing::layer_spec("transformer_block", {{"heads", int64_t{2}}});
  LayerAttrs attrs(spec);
  const AttentionOptions options = read_transformer_block(attrs);
  EXPECT_EQ(options.heads, 2);
  EXPECT_EQ(options.mlp_ratio, 4);
  EXPECT_EQ(options.dropout, 0.0);
}

TEST(LayerOptions, PlannerAndLayerFactoryShareTheDropoutBound) {
  // The cost model kept its own copy of the bound ([0, 1]) and priced a rate of 1; it now prices
  // the layer the factory built, so the plan meets the factory's bound.
  for (const std::string kind : {"attention", "transformer_block"}) {
    const LayerSpec spec = testing::layer_spec(kind, {{"heads", int64_t{2}}, {"dropout", 1.0}});
    const std::string expected =
        "exp.yaml:4: model.layers[0].dropout: must be in [0, 0.999], got 1";
    EXPECT_EQ(testing::input_error_of([&] { make_layer(spec, Shape{4, 6}, 0); }), expected) << kind;
    ModelSpec model;
    model.layers = {spec};
    EXPECT_EQ(testing::input_error_of([&] {
                layer_costs(plan_model(model, Shape{4, 6}));
              }),
              expected)
        << kind;
  }
}

TEST(LayerOptions, DropoutLayerHasTheSameBound) {
  const LayerSpec spec = testing::layer_spec("dropout", {{"rate", 1.0}});
  EXPECT_EQ(testing::input_error_of([&] { make_layer(spec, Shape{6}, 0); }),
            "exp.yaml:4: model.layers[0].rate: must be in [0, 0.999], got 1");
}

TEST(LayerOptions, TransformerBlockDefaultsAreGpt2sBlock) {
  const LayerSpec spec = testing::layer_spec("transformer_block", {{"heads", int64_t{2}}});
  LayerAttrs attrs(spec);
  const AttentionOptions options = read_transformer_block(attrs);
  EXPECT_EQ(options.norm, nn::NormKind::kLayerNorm);
  EXPECT_EQ(options.mlp, nn::MlpKind::kGelu);
  EXPECT_FALSE(options.rotary.enabled);
  EXPECT_EQ(options.rotary.base, 10000.0);
}

TEST(LayerOptions, ModernTransformerBlockOptionsAreRead) {
  const LayerSpec spec =
      testing::layer_spec("transformer_block", {{"heads", int64_t{2}},
                                                {"norm", std::string("rms_norm")},
                                                {"mlp", std::string("swiglu")},
                                                {"rotary", true},
                                                {"rotary_base", 500.0}});
  LayerAttrs attrs(spec);
  const AttentionOptions options = read_transformer_block(attrs);
  EXPECT_EQ(options.norm, nn::NormKind::kRmsNorm);
  EXPECT_EQ(options.mlp, nn::MlpKind::kSwiglu);
  EXPECT_TRUE(options.rotary.enabled);
  EXPECT_EQ(options.rotary.base, 500.0);
  EXPECT_NO_THROW(attrs.finish());
}

// Each new key with a bad value: the one-line error naming the file, line and key.
TEST(LayerOptions, BadValuesOfTheModernBlockKeysNameTheKey) {
  const auto error_of = [](const std::string& kind, const std::string& key, AttrValue value) {
    const LayerSpec spec = testing::layer_spec(kind, {{"heads", int64_t{2}}, {key, value}});
    return testing::input_error_of([&] { make_layer(spec, Shape{4, 8}, 0); });
  };
  EXPECT_EQ(error_of("transformer_block", "norm", std::string("batch_norm")),
            "exp.yaml:4: model.layers[0].norm: must be one of layer_norm, rms_norm, got "
            "'batch_norm'");
  EXPECT_EQ(error_of("transformer_block", "mlp", std::string("relu")),
            "exp.yaml:4: model.layers[0].mlp: must be one of gelu, swiglu, got 'relu'");
  for (const std::string kind : {"attention", "transformer_block"}) {
    EXPECT_EQ(error_of(kind, "rotary", int64_t{1}),
              "exp.yaml:4: model.layers[0].rotary: expected true or false, got 1")
        << kind;
    EXPECT_EQ(error_of(kind, "rotary_base", 1.0),
              "exp.yaml:4: model.layers[0].rotary_base: must be in [2, 1000000000000], got 1")
        << kind;
  }
  // attention, not transformer_block, has no MLP and no norms.
  EXPECT_EQ(error_of("attention", "mlp", std::string("swiglu")),
            "exp.yaml:4: model.layers[0].mlp: unknown key for layer 'attention' (known: dropout, "
            "heads, rotary, rotary_base)");
}

TEST(LayerOptions, RotaryEmbeddingsNeedAnEvenHeadWidth) {
  for (const std::string kind : {"attention", "transformer_block"}) {
    const LayerSpec spec = testing::layer_spec(kind, {{"heads", int64_t{2}}, {"rotary", true}});
    EXPECT_EQ(testing::input_error_of([&] {
                make_layer(spec, Shape{4, 6}, 0);
              }),
              "exp.yaml:3: model.layers[0] (" + kind +
                  ", input [4, 6]): rotary position embeddings need an even head width d / "
                  "heads, got 3")
        << kind;
  }
}

TEST(LayerOptions, RmsNormEpsHasTheLayerNormsBounds) {
  const LayerSpec spec = testing::layer_spec("rms_norm", {{"eps", 0.0}});
  EXPECT_EQ(testing::input_error_of([&] {
              make_layer(spec, Shape{4, 6}, 0);
            }),
            "exp.yaml:4: model.layers[0].eps: must be in [1e-12, 1], got 0");
}

}  // namespace
}  // namespace mpipe::model
