// Tests for the synthetic teacher and token datasets.
#include "data/synthetic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "core/error.h"

namespace mpipe::data {
namespace {

std::vector<int64_t> first_indices(int64_t n) {
  std::vector<int64_t> indices(static_cast<size_t>(n));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  return indices;
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::equal(a.span().begin(), a.span().end(), b.span().begin());
}

DataConfig features_config() {
  DataConfig config;
  config.kind = DatasetKind::kSynthetic;
  config.num_examples = 200;
  config.features = 16;
  config.classes = 4;
  return config;
}

DataConfig tokens_config() {
  DataConfig config;
  config.kind = DatasetKind::kSynthetic;
  config.tokens = true;
  config.num_examples = 64;
  config.seq_len = 32;
  config.vocab = 50;
  return config;
}

TEST(SyntheticDataset, SplitsOffAnEighthForTest) {
  const SyntheticDataset data(features_config(), 1);
  EXPECT_EQ(data.size(Split::kTest), 25);
  EXPECT_EQ(data.size(Split::kTrain), 175);
  DataConfig tiny = features_config();
  tiny.num_examples = 5;
  EXPECT_EQ(SyntheticDataset(tiny, 1).size(Split::kTest), 1);
}

TEST(SyntheticDataset, ClassificationShapesAndLabels) {
  const SyntheticDataset data(features_config(), 1);
  EXPECT_EQ(data.input_shape(), (Shape{16}));
  EXPECT_EQ(data.target_shape(), Shape{});
  EXPECT_EQ(data.num_classes(), 4);
  const auto indices = first_indices(175);
  const Tensor x = data.inputs(Split::kTrain, indices, 0, 0);
  const Tensor y = data.targets(Split::kTrain, indices);
  EXPECT_EQ(x.shape(), (Shape{175, 16}));
  EXPECT_EQ(y.shape(), (Shape{175}));
  std::vector<int> counts(4, 0);
  for (float label : y.span()) {
    ASSERT_EQ(label, std::floor(label));
    ASSERT_GE(label, 0.0f);
    ASSERT_LT(label, 4.0f);
    ++counts[static_cast<size_t>(label)];
  }
  for (int count : counts) EXPECT_GT(count, 10);  // every class occurs
  double mean = 0, square = 0;
  for (float v : x.span()) mean += v, square += double{v} * v;
  EXPECT_NEAR(mean / x.numel(), 0.0, 0.1);
  EXPECT_NEAR(square / x.numel(), 1.0, 0.1);
}

TEST(SyntheticDataset, SameSeedSameDataOtherSeedOtherData) {
  const auto indices = first_indices(20);
  const SyntheticDataset a(features_config(), 3), b(features_config(), 3), c(features_config(), 4);
  EXPECT_TRUE(
      same_values(a.inputs(Split::kTest, indices, 0, 0), b.inputs(Split::kTest, indices, 9, 9)));
  EXPECT_TRUE(same_values(a.targets(Split::kTrain, indices), b.targets(Split::kTrain, indices)));
  EXPECT_FALSE(
      same_values(a.inputs(Split::kTrain, indices, 0, 0), c.inputs(Split::kTrain, indices, 0, 0)));
}

TEST(SyntheticDataset, TrainAndTestExamplesDiffer) {
  const SyntheticDataset data(features_config(), 3);
  const std::vector<int64_t> first{0};
  EXPECT_FALSE(
      same_values(data.inputs(Split::kTrain, first, 0, 0), data.inputs(Split::kTest, first, 0, 0)));
}

TEST(SyntheticDataset, RegressionHasOneTargetPerExample) {
  DataConfig config = features_config();
  config.classes = 0;
  const SyntheticDataset data(config, 2);
  EXPECT_EQ(data.num_classes(), 0);
  EXPECT_EQ(data.target_shape(), (Shape{1}));
  const Tensor y = data.targets(Split::kTrain, first_indices(175));
  EXPECT_EQ(y.shape(), (Shape{175, 1}));
  double square = 0;
  for (float v : y.span()) square += double{v} * v;
  EXPECT_NEAR(square / 175, 1.01, 0.4);  // w . x has unit variance, noise 0.01
}

TEST(SyntheticDataset, TokenTargetsAreInputsShiftedByOne) {
  const SyntheticDataset data(tokens_config(), 5);
  EXPECT_EQ(data.input_shape(), (Shape{32}));
  EXPECT_EQ(data.target_shape(), (Shape{32}));
  EXPECT_EQ(data.num_classes(), 50);
  const auto indices = first_indices(56);
  const Tensor x = data.inputs(Split::kTrain, indices, 0, 0);
  const Tensor y = data.targets(Split::kTrain, indices);
  ASSERT_EQ(x.shape(), (Shape{56, 32}));
  for (int64_t row = 0; row < 56; ++row) {
    for (int64_t i = 0; i + 1 < 32; ++i) ASSERT_EQ(y[row * 32 + i], x[row * 32 + i + 1]);
  }
  for (float token : x.span()) {
    ASSERT_GE(token, 0.0f);
    ASSERT_LT(token, 50.0f);
  }
}

TEST(SyntheticDataset, NextTokenIsMostlyAFunctionOfThePreviousOne) {
  const SyntheticDataset data(tokens_config(), 5);
  const auto indices = first_indices(56);
  const Tensor x = data.inputs(Split::kTrain, indices, 0, 0);
  const Tensor y = data.targets(Split::kTrain, indices);
  std::map<float, std::map<float, int>> successors;
  for (int64_t i = 0; i < x.numel(); ++i) ++successors[x[i]][y[i]];
  int64_t predictable = 0;
  for (const auto& [token, counts] : successors) {
    int best = 0;
    for (const auto& [next, count] : counts) best = std::max(best, count);
    predictable += best;
  }
  EXPECT_GT(static_cast<double>(predictable) / x.numel(), 0.85);
  EXPECT_GT(data.optimal_token_loss(), 0.0);
  EXPECT_LT(data.optimal_token_loss(), 0.8);  // far below log(50) = 3.9
}

TEST(SyntheticDataset, BadSettingsAreInputErrors) {
  DataConfig config = features_config();
  config.classes = 1;
  EXPECT_THROW(SyntheticDataset(config, 1), InputError);
  config = tokens_config();
  config.vocab = 1;
  EXPECT_THROW(SyntheticDataset(config, 1), InputError);
  config = features_config();
  config.num_examples = 1;
  EXPECT_THROW(SyntheticDataset(config, 1), InputError);
}

}  // namespace
}  // namespace mpipe::data
