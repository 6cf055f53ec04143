// Tests for the layer options: one owner of each attribute's default and bounds, which the layer
// factory and the cost model both read.
#include "model/layer_options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
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
  EXPECT_EQ(
      error_of("attention", "mlp", std::string("swiglu")),
      "exp.yaml:4: model.layers[0].mlp: unknown key for layer 'attention' (known: causal, dropout, "
      "heads, kv_heads, rotary, rotary_base)");
}

// kv_heads: at least 1, dividing heads, and only on the layers with self-attention.
TEST(LayerOptions, KvHeadsMustDivideHeadsOnALayerWithSelfAttention) {
  using A = std::map<std::string, AttrValue>;
  const auto error_of = [](const std::string& kind, const A& attrs) {
    return testing::input_error_of([&] {
      make_layer(testing::layer_spec(kind, attrs), Shape{4, 8}, 0);
    });
  };
  for (const std::string kind : {"attention", "transformer_block"}) {
    EXPECT_EQ(error_of(kind, {{"heads", int64_t{4}}, {"kv_heads", int64_t{0}}}),
              "exp.yaml:4: model.layers[0].kv_heads: must be >= 1, got 0")
        << kind;
    EXPECT_EQ(error_of(kind, {{"heads", int64_t{4}}, {"kv_heads", int64_t{3}}}),
              "exp.yaml:3: model.layers[0] (" + kind +
                  ", input [4, 8]): attention kv_heads must divide heads = 4, got 3")
        << kind;
    const LayerSpec spec = testing::layer_spec(kind, {{"heads", int64_t{4}}});
    LayerAttrs attrs(spec);
    EXPECT_EQ(read_attention(attrs, false).kv_heads, 4) << kind;
  }
  EXPECT_EQ(error_of("linear", {{"units", int64_t{4}}, {"kv_heads", int64_t{2}}}),
            "exp.yaml:4: model.layers[0].kv_heads: unknown key for layer 'linear' (known: bias, "
            "init, tie, units)");
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

TEST(LayerOptions, AttentionIsCausalUnlessToldAndTakesAPadIdOnlyWhenItReadsTokenIds) {
  const LayerSpec plain = testing::layer_spec("attention", {{"heads", int64_t{2}}});
  LayerAttrs attrs(plain);
  const AttentionOptions options = read_attention(attrs, /*reads_ids=*/false);
  EXPECT_TRUE(options.causal);
  EXPECT_EQ(options.padding.pad_id, 0);
  const LayerSpec padded = testing::reading_layer_spec(
      "attention", {{"heads", int64_t{2}}, {"causal", false}, {"pad_id", int64_t{3}}}, {"ids"});
  LayerAttrs padded_attrs(padded);
  const AttentionOptions padded_options = read_attention(padded_attrs, /*reads_ids=*/true);
  EXPECT_FALSE(padded_options.causal);
  EXPECT_EQ(padded_options.padding.pad_id, 3);
  EXPECT_NO_THROW(padded_attrs.finish());
}

// The two forms of attention: without a read, today's layer (its backward split for zb_h1); with
// `read: [IDS]`, the same parameters, reading the token ids, its backward whole (a stage runs a
// reading layer's backward in one piece).
TEST(LayerOptions, AttentionWithAReadOfTokenIdsReadsThem) {
  const std::vector<Shape> ids = {Shape{4}};
  const auto plain =
      make_layer(testing::layer_spec("attention", {{"heads", int64_t{2}}}), Shape{4, 8}, 1);
  const auto padded =
      make_layer(testing::reading_layer_spec("attention", {{"heads", int64_t{2}}}, {"ids"}),
                 Shape{4, 8}, ids, 1);
  EXPECT_EQ(plain->num_reads(), 0);
  EXPECT_TRUE(plain->splits_backward());
  EXPECT_EQ(padded->num_reads(), 1);
  EXPECT_FALSE(padded->splits_backward());
  EXPECT_FALSE(padded->needs().splits_backward);
  ASSERT_EQ(plain->param_specs().size(), padded->param_specs().size());
  for (size_t p = 0; p < plain->param_specs().size(); ++p) {
    EXPECT_EQ(plain->param_specs()[p].name, padded->param_specs()[p].name);
    EXPECT_EQ(plain->param_specs()[p].shape, padded->param_specs()[p].shape);
  }
}

TEST(LayerOptions, CrossAttentionReadsTheMemoryAndOptionallyItsTokenIds) {
  const LayerSpec memory_only =
      testing::reading_layer_spec("cross_attention", {{"heads", int64_t{2}}}, {"memory"});
  const std::vector<Shape> memory = {Shape{6, 8}}, memory_and_ids = {Shape{6, 8}, Shape{6}};
  const auto layer = make_layer(memory_only, Shape{4, 8}, memory, 1);
  EXPECT_EQ(layer->kind(), "cross_attention");
  EXPECT_EQ(layer->num_reads(), 1);
  EXPECT_EQ(layer->output_shape(), (Shape{4, 8}));
  const LayerSpec padded = testing::reading_layer_spec(
      "cross_attention", {{"heads", int64_t{2}}, {"pad_id", int64_t{1}}}, {"memory", "source"});
  // The output projection's std follows the model's (model.init: gpt2).
  const auto with_ids = make_layer(padded, Shape{4, 8}, memory_and_ids, 1, {.residual_std = 0.01f});
  EXPECT_EQ(with_ids->num_reads(), 2);
  const std::vector<nn::ParamSpec> specs = with_ids->param_specs();
  ASSERT_EQ(specs.size(), 6u);
  EXPECT_EQ(specs[0].name, "q.weight");
  EXPECT_EQ(specs[2].name, "kv.weight");
  EXPECT_EQ(specs[2].shape, (Shape{16, 8}));
  EXPECT_EQ(specs[4].name, "proj.weight");
  EXPECT_EQ(specs[4].std, 0.01f);
  EXPECT_EQ(specs[0].std, 0.02f);
}

// Each bad key, read or shape of attention and cross_attention: its one-line error.
TEST(LayerOptions, BadAttentionAndCrossAttentionInputsNameTheirKeyOrRead) {
  const auto error_of = [](const std::string& kind, std::map<std::string, AttrValue> attrs,
                           const std::vector<std::string>& names, const std::vector<Shape>& reads) {
    const LayerSpec spec = testing::reading_layer_spec(kind, attrs, names);
    return testing::input_error_of([&] { make_layer(spec, Shape{4, 8}, reads, 1); });
  };
  using A = std::map<std::string, AttrValue>;
  const A two{{"heads", int64_t{2}}};
  const std::vector<Shape> memory = {Shape{6, 8}}, memory_and_ids = {Shape{6, 8}, Shape{6}};
  // Heads.
  EXPECT_EQ(error_of("cross_attention", {{"heads", int64_t{3}}}, {"memory"}, memory),
            "exp.yaml:3: model.layers[0] (cross_attention, input [4, 8]): cross_attention heads "
            "must divide d = 8, got 3");
  EXPECT_EQ(error_of("cross_attention", {{"heads", int64_t{0}}}, {"memory"}, memory),
            "exp.yaml:4: model.layers[0].heads: must be >= 1, got 0");
  EXPECT_EQ(error_of("cross_attention", {}, {"memory"}, memory),
            "exp.yaml:3: model.layers[0].heads: required for layer 'cross_attention'");
  EXPECT_EQ(error_of("attention", {{"heads", int64_t{3}}}, {"ids"}, {Shape{4}}),
            "exp.yaml:3: model.layers[0] (attention, input [4, 8]): attention heads must divide d "
            "= 8, got 3");
  // The memory's width is not the input's.
  EXPECT_EQ(error_of("cross_attention", two, {"memory"}, {Shape{6, 4}}),
            "exp.yaml:5: model.layers[0].read[0]: 'memory' has shape [6, 4], but cross_attention "
            "needs a memory [S, 8] (its input's d)");
  EXPECT_EQ(error_of("cross_attention", two, {"memory"}, {Shape{48}}),
            "exp.yaml:5: model.layers[0].read[0]: 'memory' has shape [48], but cross_attention "
            "needs a memory [S, 8] (its input's d)");
  // Token ids that are not one per key.
  EXPECT_EQ(error_of("cross_attention", two, {"memory", "source"}, {Shape{6, 8}, Shape{5}}),
            "exp.yaml:6: model.layers[0].read[1]: 'source' has shape [5], but cross_attention "
            "needs the memory's token ids [6]");
  EXPECT_EQ(error_of("cross_attention", two, {"memory", "source"}, {Shape{6, 8}, Shape{6, 8}}),
            "exp.yaml:6: model.layers[0].read[1]: 'source' has shape [6, 8], but cross_attention "
            "needs the memory's token ids [6]");
  EXPECT_EQ(error_of("attention", two, {"target_in"}, {Shape{5}}),
            "exp.yaml:5: model.layers[0].read[0]: 'target_in' has shape [5], but attention needs "
            "its input's token ids [4]");
  // Reads beyond what a kind takes, and none at all.
  EXPECT_EQ(error_of("attention", two, {"ids", "more"}, {Shape{4}, Shape{4}}),
            "exp.yaml:6: model.layers[0].read[1]: attention reads one value (its sequence's token "
            "ids), nothing more");
  EXPECT_EQ(error_of("cross_attention", two, {"memory", "source", "more"},
                     {Shape{6, 8}, Shape{6}, Shape{6}}),
            "exp.yaml:7: model.layers[0].read[2]: cross_attention reads a memory and its token "
            "ids, nothing more");
  EXPECT_EQ(error_of("cross_attention", two, {}, {}),
            "exp.yaml:3: model.layers[0]: cross_attention needs at least one value to read (read: "
            "[NAME])");
  // pad_id.
  EXPECT_EQ(
      error_of("attention", {{"heads", int64_t{2}}, {"pad_id", int64_t{-1}}}, {"ids"}, {Shape{4}}),
      "exp.yaml:4: model.layers[0].pad_id: must be >= 0, got -1");
  EXPECT_EQ(error_of("cross_attention", {{"heads", int64_t{2}}, {"pad_id", int64_t{-1}}},
                     {"memory", "source"}, memory_and_ids),
            "exp.yaml:4: model.layers[0].pad_id: must be >= 0, got -1");
  EXPECT_EQ(error_of("attention", {{"heads", int64_t{2}}, {"pad_id", int64_t{1}}}, {}, {}),
            "exp.yaml:4: model.layers[0].pad_id: unknown key for layer 'attention' (known: "
            "causal, dropout, heads, kv_heads, rotary, rotary_base)");
  EXPECT_EQ(error_of("cross_attention", {{"heads", int64_t{2}}, {"pad_id", int64_t{1}}}, {"memory"},
                     memory),
            "exp.yaml:4: model.layers[0].pad_id: unknown key for layer 'cross_attention' (known: "
            "dropout, heads)");
  // causal: a flag of attention; cross-attention is never causal.
  EXPECT_EQ(error_of("attention", {{"heads", int64_t{2}}, {"causal", std::string("yes")}}, {}, {}),
            "exp.yaml:4: model.layers[0].causal: expected true or false, got 'yes'");
  EXPECT_EQ(
      error_of("attention", {{"heads", int64_t{2}}, {"causal", int64_t{0}}}, {"ids"}, {Shape{4}}),
      "exp.yaml:4: model.layers[0].causal: expected true or false, got 0");
  EXPECT_EQ(error_of("cross_attention", {{"heads", int64_t{2}}, {"causal", false}},
                     {"memory", "source"}, memory_and_ids),
            "exp.yaml:4: model.layers[0].causal: unknown key for layer 'cross_attention' (known: "
            "dropout, heads, pad_id)");
}

}  // namespace
}  // namespace mpipe::model
