// Tests for model.init: gpt2: the residual output projections of every Transformer block are
// drawn with std 0.02 / sqrt(2 · blocks), the other weights as before, whatever the partition.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/model_builder.h"
#include "nn/param_buffer.h"
#include "support/layer_spec.h"

namespace mpipe::model {
namespace {

constexpr int kBlocks = 3;
const Shape kInput{4, 32};

ModelSpec blocks(ModelInit init) {
  ModelSpec spec;
  spec.init = init;
  for (int i = 0; i < kBlocks; ++i) {
    spec.layers.push_back(testing::layer_spec("transformer_block", {{"heads", int64_t{4}}}));
  }
  return spec;
}

// Every value of the parameters named `name` (in any block) of layers [begin, end), drawn from
// seed 9.
std::vector<float> drawn(const ModelSpec& spec, const std::string& name, int begin = 0,
                         int end = kBlocks) {
  auto layers = build_layers(spec, kInput, begin, end);
  std::vector<nn::Layer*> raw;
  for (auto& layer : layers) raw.push_back(layer.get());
  nn::ParamBuffer params(raw);
  params.initialize(9);
  std::vector<float> values;
  for (const nn::ParamBuffer::Entry& entry : params.entries()) {
    if (entry.name != name) continue;
    const float* first = params.values().data() + entry.offset;
    values.insert(values.end(), first, first + entry.shape.numel());
  }
  return values;
}

double standard_deviation(const std::vector<float>& values) {
  double sum = 0.0, sum_sq = 0.0;
  for (float v : values) sum += v, sum_sq += double(v) * v;
  const auto n = static_cast<double>(values.size());
  return std::sqrt(sum_sq / n - (sum / n) * (sum / n));
}

TEST(Gpt2Init, ResidualProjectionsHaveStdScaledByTwiceTheBlockCount) {
  const ModelSpec spec = blocks(ModelInit::kGpt2);
  EXPECT_FLOAT_EQ(model_context(spec).residual_std, 0.02f / std::sqrt(2.0f * kBlocks));
  const double expected = 0.02 / std::sqrt(2.0 * kBlocks);
  // 3 · 1024 and 3 · 4096 draws: the sample std is within 3% (about 5 standard errors).
  for (const std::string name : {"attn.proj.weight", "mlp.fc2.weight"}) {
    const std::vector<float> values = drawn(spec, name);
    ASSERT_FALSE(values.empty()) << name;
    EXPECT_NEAR(standard_deviation(values), expected, 0.03 * expected) << name;
  }
  // The other weights keep GPT-2's 0.02.
  for (const std::string name : {"attn.qkv.weight", "mlp.fc1.weight"}) {
    EXPECT_NEAR(standard_deviation(drawn(spec, name)), 0.02, 0.03 * 0.02) << name;
  }
}

TEST(Gpt2Init, DefaultInitDrawsTheResidualProjectionsLikeTheOtherWeights) {
  const ModelSpec spec = blocks(ModelInit::kDefault);
  EXPECT_EQ(model_context(spec).residual_std, 0.02f);
  EXPECT_NEAR(standard_deviation(drawn(spec, "mlp.fc2.weight")), 0.02, 0.03 * 0.02);
}

TEST(Gpt2Init, TheDrawDoesNotDependOnThePartition) {
  // A stage holding only the last block draws the same values as the whole model's last block.
  const ModelSpec spec = blocks(ModelInit::kGpt2);
  const std::vector<float> whole = drawn(spec, "attn.proj.weight");
  const std::vector<float> last_stage = drawn(spec, "attn.proj.weight", kBlocks - 1, kBlocks);
  ASSERT_EQ(whole.size(), kBlocks * last_stage.size());
  const std::vector<float> whole_last(whole.end() - static_cast<ptrdiff_t>(last_stage.size()),
                                      whole.end());
  EXPECT_EQ(whole_last, last_stage);
}

}  // namespace
}  // namespace mpipe::model
