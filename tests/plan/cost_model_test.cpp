// Tests for the cost model: for every layer kind, the bytes it predicts a training forward keeps
// equal what the real layer's forward saves; backward FLOPs; parameter bytes as laid out.
#include "plan/cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/context.h"
#include "model/layer_factory.h"
#include "nn/param_buffer.h"
#include "support/input_error_of.h"
#include "support/layer_spec.h"
#include "support/random_tensor.h"

namespace mpipe::plan {
namespace {

struct Case {
  std::string kind;
  std::map<std::string, model::AttrValue> attrs;
  Shape input;  // one example
};

model::LayerSpec spec_of(const Case& c) { return testing::layer_spec(c.kind, c.attrs); }

// A layer that reads values, with one example's shape of each (token ids are a vector [S]).
struct ReadingCase {
  std::string kind;
  std::map<std::string, model::AttrValue> attrs;
  Shape input;
  std::vector<Shape> reads;
};

// Whether layers of `kind` read values: the reading cases cover those kinds (attention also
// has a form that reads nothing, among the cases above).
bool reads_values(const std::string& kind) {
  const std::vector<std::string> reading = model::reading_layer_kinds();
  return std::find(reading.begin(), reading.end(), kind) != reading.end();
}

// Every kind that reads, with token ids padding some keys where it takes them.
std::vector<ReadingCase> reading_cases() {
  using A = std::map<std::string, model::AttrValue>;
  return {
      {"add", {}, Shape{4, 6}, {Shape{4, 6}}},
      {"concat", {}, Shape{2, 4, 4}, {Shape{3, 4, 4}, Shape{1, 4, 4}}},
      {"attention", A{{"heads", int64_t{2}}}, Shape{4, 6}, {Shape{4}}},
      {"attention",
       A{{"heads", int64_t{3}}, {"causal", false}, {"dropout", 0.1}},
       Shape{4, 6},
       {Shape{4}}},
      {"cross_attention", A{{"heads", int64_t{2}}}, Shape{4, 6}, {Shape{5, 6}}},
      {"cross_attention",
       A{{"heads", int64_t{3}}, {"dropout", 0.1}},
       Shape{4, 6},
       {Shape{7, 6}, Shape{7}}},
  };
}

model::LayerSpec reading_spec_of(const ReadingCase& c) {
  std::vector<std::string> names;
  for (size_t r = 0; r < c.reads.size(); ++r) names.push_back(std::string(1, char('a' + r)));
  return testing::reading_layer_spec(c.kind, c.attrs, names);
}

// Every layer kind, some in several configurations (identity and projection shortcuts,
// bottlenecks, max-pool windows below and at 256 taps, MLP ratios, dropout, the Transformer
// block's RMS norms, SwiGLU MLP and rotary position embeddings).
std::vector<Case> cases() {
  using A = std::map<std::string, model::AttrValue>;
  return {
      {"linear", A{{"units", int64_t{5}}}, Shape{7}},
      {"relu", {}, Shape{6}},
      {"gelu", {}, Shape{2, 3}},
      {"tanh", {}, Shape{6}},
      {"dropout", A{{"rate", 0.5}}, Shape{6}},
      {"flatten", {}, Shape{2, 3, 4}},
      {"conv2d", A{{"channels", int64_t{4}}, {"kernel", int64_t{3}}, {"padding", int64_t{1}}},
       Shape{3, 8, 8}},
      {"batch_norm2d", {}, Shape{3, 5, 5}},
      {"max_pool2d", A{{"kernel", int64_t{2}}}, Shape{3, 8, 8}},
      {"max_pool2d", A{{"kernel", int64_t{16}}}, Shape{2, 16, 16}},
      {"avg_pool2d", A{{"kernel", int64_t{2}}}, Shape{3, 8, 8}},
      {"global_avg_pool", {}, Shape{3, 4, 4}},
      {"upsample", {}, Shape{3, 4, 4}},
      {"upsample", A{{"scale", int64_t{3}}}, Shape{2, 3, 5}},
      {"residual_block", A{{"channels", int64_t{4}}}, Shape{4, 6, 6}},
      {"residual_block", A{{"channels", int64_t{8}}, {"stride", int64_t{2}}}, Shape{4, 6, 6}},
      {"residual_block", A{{"channels", int64_t{8}}, {"bottleneck", true}}, Shape{8, 6, 6}},
      {"residual_block", A{{"channels", int64_t{8}}, {"bottleneck", true}, {"stride", int64_t{2}}},
       Shape{4, 7, 7}},
      {"separable_cell", A{{"channels", int64_t{4}}}, Shape{4, 6, 6}},
      {"separable_cell", A{{"channels", int64_t{6}}, {"stride", int64_t{2}}}, Shape{4, 7, 7}},
      {"embedding", A{{"vocab", int64_t{10}}, {"dim", int64_t{4}}}, Shape{5}},
      {"layer_norm", {}, Shape{5, 6}},
      {"attention", A{{"heads", int64_t{2}}}, Shape{4, 6}},
      {"transformer_block", A{{"heads", int64_t{2}}}, Shape{4, 6}},
      {"transformer_block", A{{"heads", int64_t{3}}, {"mlp_ratio", int64_t{2}}, {"dropout", 0.1}},
       Shape{5, 6}},
      {"rms_norm", {}, Shape{5, 6}},
      {"attention", A{{"heads", int64_t{3}}, {"rotary", true}}, Shape{4, 6}},
      {"transformer_block",
       A{{"heads", int64_t{3}},
         {"mlp_ratio", int64_t{2}},
         {"dropout", 0.1},
         {"norm", std::string("rms_norm")},
         {"mlp", std::string("swiglu")},
         {"rotary", true}},
       Shape{5, 6}},
  };
}

// What the real layer's training forward saves for a micro-batch of `rows` examples.
nn::Saved measured_saved(const model::LayerSpec& spec, const Shape& input, int64_t rows) {
  std::unique_ptr<nn::Layer> layer = model::make_layer(spec, input, 1);
  nn::Layer* raw = layer.get();
  nn::ParamBuffer params(std::span<nn::Layer* const>(&raw, 1));
  params.initialize(5);
  kernels::KernelContext kernels;
  const nn::LayerContext ctx{.kernels = kernels, .seed = 1, .step = 0, .first_example = 0};
  Tensor x = testing::uniform_tensor(input.batched(rows), CounterRng(3, RngPurpose::kData, 0, 0));
  if (spec.kind == "embedding") x.fill(2.0f);  // token ids
  return std::move(layer->forward(x, ctx).saved);
}

size_t measured_saved_bytes(const model::LayerSpec& spec, const Shape& input, int64_t rows) {
  return measured_saved(spec, input, rows).bytes();
}

TEST(CostModel, PredictsExactlyWhatEveryLayerKindsForwardSaves) {
  std::vector<std::string> covered;
  for (const Case& c : cases()) {
    model::ModelSpec spec;
    spec.layers = {spec_of(c)};
    // Layer 0 of the plan; built as layer 1 below so the first-layer shortcuts do not apply.
    const model::ModelPlan plan = model::plan_model(spec, c.input);
    const LayerCost cost = cost_of(plan.layers[0]);
    for (int64_t rows : {1, 2, 5}) {
      EXPECT_EQ(cost.kept_bytes(rows),
                static_cast<double>(measured_saved_bytes(spec.layers[0], c.input, rows)))
          << c.kind << " input " << c.input.str() << " rows " << rows;
    }
    covered.push_back(c.kind);
  }
  for (const std::string& kind : model::known_layer_kinds()) {
    if (reads_values(kind)) continue;  // built with its reads' shapes: the reading cases' test
    EXPECT_NE(std::find(covered.begin(), covered.end(), kind), covered.end())
        << "no memory test case for layer kind " << kind;
  }
}

// Each layer reports what it keeps tensor by tensor (the allocator rounds each block): the saved
// tensors' sizes, as a sorted list, equal the reported ones for `rows` examples.
TEST(CostModel, EveryLayerKindReportsTheTensorsItsForwardSavesOneByOne) {
  std::vector<std::string> covered;
  for (const Case& c : cases()) {
    const std::unique_ptr<nn::Layer> layer = model::make_layer(spec_of(c), c.input, 1);
    const nn::LayerNeeds needs = layer->needs();
    for (int64_t rows : {1, 3}) {
      std::vector<double> reported;
      for (double bytes : needs.kept_tensor_bytes) reported.push_back(bytes * rows);
      for (double bytes : needs.kept_fixed_tensor_bytes) reported.push_back(bytes);
      if (needs.kept_packed_bytes > 0.0) {  // packed into floats
        reported.push_back(4.0 * std::ceil(needs.kept_packed_bytes * rows / 4.0));
      }
      std::vector<double> measured;
      for (const Tensor& t : measured_saved(spec_of(c), c.input, rows).tensors) {
        measured.push_back(static_cast<double>(t.bytes()));
      }
      std::sort(reported.begin(), reported.end());
      std::sort(measured.begin(), measured.end());
      EXPECT_EQ(reported, measured) << c.kind << " input " << c.input.str() << " rows " << rows;
    }
    covered.push_back(c.kind);
  }
  for (const std::string& kind : model::known_layer_kinds()) {
    if (reads_values(kind)) continue;  // built with its reads' shapes: the test below
    EXPECT_NE(std::find(covered.begin(), covered.end(), kind), covered.end())
        << "no case for layer kind " << kind;
  }
}

// The same for the layers that read values, built with their reads' shapes and run by
// forward_reading (token ids: every third one the pad id 0).
TEST(CostModel, EveryReadingLayerKindReportsTheTensorsItsForwardSavesOneByOne) {
  std::vector<std::string> covered;
  for (const ReadingCase& c : reading_cases()) {
    const std::unique_ptr<nn::Layer> layer =
        model::make_layer(reading_spec_of(c), c.input, c.reads, 1);
    nn::Layer* raw = layer.get();
    nn::ParamBuffer params(std::span<nn::Layer* const>(&raw, 1));
    params.initialize(5);
    kernels::KernelContext kernels;
    const nn::LayerContext ctx{.kernels = kernels, .seed = 1, .step = 0, .first_example = 0};
    const nn::LayerNeeds needs = layer->needs();
    for (int64_t rows : {1, 3}) {
      const auto rng = [](uint64_t stream) { return CounterRng(3, RngPurpose::kData, 0, stream); };
      const Tensor x = testing::uniform_tensor(c.input.batched(rows), rng(0));
      std::vector<Tensor> reads;
      std::vector<const Tensor*> pointers;
      for (size_t r = 0; r < c.reads.size(); ++r) {
        reads.push_back(testing::uniform_tensor(c.reads[r].batched(rows), rng(1 + r)));
        if (c.reads[r].rank() == 1) {  // token ids
          for (int64_t i = 0; i < reads.back().numel(); ++i) reads.back()[i] = float(i % 3);
        }
      }
      for (const Tensor& t : reads) pointers.push_back(&t);
      std::vector<double> reported, measured;
      for (double bytes : needs.kept_tensor_bytes) reported.push_back(bytes * rows);
      for (double bytes : needs.kept_fixed_tensor_bytes) reported.push_back(bytes);
      for (const Tensor& t : layer->forward_reading(x, pointers, ctx).saved.tensors) {
        measured.push_back(static_cast<double>(t.bytes()));
      }
      std::sort(reported.begin(), reported.end());
      std::sort(measured.begin(), measured.end());
      EXPECT_EQ(reported, measured) << c.kind << " input " << c.input.str() << " rows " << rows;
    }
    covered.push_back(c.kind);
  }
  for (const std::string& kind : model::reading_layer_kinds()) {
    EXPECT_NE(std::find(covered.begin(), covered.end(), kind), covered.end())
        << "no reading case for layer kind " << kind;
  }
}

// linear(16) → relu → linear(4) on [8] inputs.
model::ModelSpec small_mlp() {
  model::ModelSpec spec;
  spec.layers = {spec_of({"linear", {{"units", int64_t{16}}}, Shape{8}}),
                 spec_of({"relu", {}, Shape{16}}),
                 spec_of({"linear", {{"units", int64_t{4}}}, Shape{16}})};
  return spec;
}

TEST(CostModel, BackwardIsTwiceTheForwardForMatrixProductsButOnceForTheFirstLayer) {
  const model::ModelSpec spec = small_mlp();
  const std::vector<LayerCost> costs = layer_costs(model::plan_model(spec, Shape{8}));
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[0].backward_flops, costs[0].forward_flops);  // no input gradient
  EXPECT_EQ(costs[1].backward_flops, costs[1].forward_flops);  // element-wise
  EXPECT_EQ(costs[2].backward_flops, 2.0 * costs[2].forward_flops);
  EXPECT_GT(costs[2].forward_flops, 0.0);
}

// The time model's memory traffic (bytes beyond the matrix products' arithmetic): a linear layer
// reads x and writes y, then reads dy, writes dx (none as the model's first layer) and reads dy
// for its bias gradient, and keeps x as handed in (no copy); a ReLU reads x and writes y, then
// reads x and dy and writes dx. A layer that states none is charged its input, output and saved
// tensors, then its saved tensors and both gradients.
TEST(CostModel, LinearAndActivationLayersAreChargedTheirOperandsNotACopyOfTheirInput) {
  const std::vector<LayerCost> costs = layer_costs(model::plan_model(small_mlp(), Shape{8}));
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[0].forward_traffic_bytes(), 32.0 + 64.0);   // x: 8 floats, y: 16
  EXPECT_EQ(costs[0].backward_traffic_bytes(), 64.0 + 64.0);  // dy twice, no dx
  EXPECT_EQ(costs[1].forward_traffic_bytes(), 2 * 64.0);
  EXPECT_EQ(costs[1].backward_traffic_bytes(), 3 * 64.0);
  EXPECT_EQ(costs[2].forward_traffic_bytes(), 64.0 + 16.0);
  EXPECT_EQ(costs[2].backward_traffic_bytes(), 16.0 + 64.0 + 16.0);

  model::ModelSpec first;
  first.layers = {spec_of({"relu", {}, Shape{8}}), spec_of({"layer_norm", {}, Shape{8}})};
  const std::vector<LayerCost> other = layer_costs(model::plan_model(first, Shape{8}));
  EXPECT_EQ(other[0].forward_traffic_bytes(), 2 * 32.0);
  EXPECT_EQ(other[0].backward_traffic_bytes(), 0.0);  // no input gradient
  const LayerCost& norm = other[1];
  EXPECT_FALSE(norm.stated_forward_traffic_bytes.has_value());
  EXPECT_EQ(norm.forward_traffic_bytes(), 32.0 + 32.0 + norm.saved_bytes);
  EXPECT_EQ(norm.backward_traffic_bytes(), norm.saved_bytes + 32.0 + 32.0);
  EXPECT_GT(norm.saved_bytes, 0.0);
}

TEST(CostModel, ParameterBytesAreAlignedPerTensorLikeTheParameterBuffer) {
  const model::ModelSpec spec = small_mlp();
  const std::vector<LayerCost> costs = layer_costs(model::plan_model(spec, Shape{8}));
  // weight [16, 8] = 512 B, bias [16] = 64 B; weight [4, 16] = 256 B, bias [4] = 16 → 64 B.
  EXPECT_EQ(costs[0].param_bytes, 576.0);
  EXPECT_EQ(costs[1].param_bytes, 0.0);
  EXPECT_EQ(costs[2].param_bytes, 320.0);
  EXPECT_EQ(costs[2].num_params, 68);
  EXPECT_EQ(costs[0].input_bytes, 32.0);
  EXPECT_EQ(costs[0].output_bytes, 64.0);
}

TEST(CostModel, BatchNormBuffersAreCountedApartFromParameters) {
  model::ModelSpec spec;
  spec.layers = {spec_of({"batch_norm2d", {}, Shape{3, 5, 5}})};
  const LayerCost cost = layer_costs(model::plan_model(spec, Shape{3, 5, 5}))[0];
  EXPECT_EQ(cost.param_bytes, 128.0);   // weight and bias [3], 64 B each
  EXPECT_EQ(cost.buffer_bytes, 128.0);  // running mean and variance
}

TEST(CostModel, SharesTheLayerFactorysDropoutBound) {
  // The cost model kept its own copy of the bound ([0, 1]) and priced a rate of 1; it now prices
  // the layer the factory built, so the plan meets the factory's bound.
  for (const std::string kind : {"attention", "transformer_block"}) {
    const model::LayerSpec spec =
        testing::layer_spec(kind, {{"heads", int64_t{2}}, {"dropout", 1.0}});
    const std::string expected =
        "exp.yaml:4: model.layers[0].dropout: must be in [0, 0.999], got 1";
    EXPECT_EQ(testing::input_error_of([&] {
                model::make_layer(spec, Shape{4, 6}, 0);
              }),
              expected)
        << kind;
    model::ModelSpec model;
    model.layers = {spec};
    EXPECT_EQ(testing::input_error_of([&] {
                layer_costs(model::plan_model(model, Shape{4, 6}));
              }),
              expected)
        << kind;
  }
}

}  // namespace
}  // namespace mpipe::plan
