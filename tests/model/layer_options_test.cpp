// Tests for the layer options: one owner of each attribute's default and bounds, which the layer
// factory and the cost model both read.
#include "model/layer_options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"
#include "model/cost_model.h"
#include "model/layer_factory.h"
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

TEST(LayerOptions, CostModelAndLayerFactoryShareTheDropoutBound) {
  // The cost model kept its own copy of the bound ([0, 1]) and priced a rate of 1.
  for (const std::string kind : {"attention", "transformer_block"}) {
    const LayerSpec spec = testing::layer_spec(kind, {{"heads", int64_t{2}}, {"dropout", 1.0}});
    const std::string expected =
        "exp.yaml:4: model.layers[0].dropout: must be in [0, 0.999], got 1";
    EXPECT_EQ(testing::input_error_of([&] { make_layer(spec, Shape{4, 6}, 0); }), expected) << kind;
    const LayerPlan plan{.index = 0, .kind = kind, .input = Shape{4, 6}, .output = Shape{4, 6}};
    EXPECT_EQ(testing::input_error_of([&] { cost_of(spec, plan); }), expected) << kind;
  }
}

TEST(LayerOptions, DropoutLayerHasTheSameBound) {
  const LayerSpec spec = testing::layer_spec("dropout", {{"rate", 1.0}});
  EXPECT_EQ(testing::input_error_of([&] { make_layer(spec, Shape{6}, 0); }),
            "exp.yaml:4: model.layers[0].rate: must be in [0, 0.999], got 1");
}

}  // namespace
}  // namespace mpipe::model
