// Tests of sampling one token from logits: temperature 0 is greedy, higher ones follow softmax,
// top-k and top-p keep only the most likely tokens.
#include "train/generator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace mpipe::train {
namespace {

TEST(SampleIndex, TemperatureZeroAlwaysTakesTheLargestLogit) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 2.9f};
  for (float u : {0.0f, 0.3f, 0.99f}) EXPECT_EQ(sample_index(logits, {.temperature = 0.0}, u), 1);
}

TEST(SampleIndex, PositiveTemperatureSplitsTheUnitIntervalBySoftmax) {
  // Equal logits: four equal quarters of [0, 1).
  const std::vector<float> logits(4, 1.0f);
  EXPECT_EQ(sample_index(logits, {.temperature = 1.0}, 0.1f), 0);
  EXPECT_EQ(sample_index(logits, {.temperature = 1.0}, 0.3f), 1);
  EXPECT_EQ(sample_index(logits, {.temperature = 1.0}, 0.6f), 2);
  EXPECT_EQ(sample_index(logits, {.temperature = 1.0}, 0.9f), 3);
}

TEST(SampleIndex, TopKSplitsTheIntervalAmongTheKLargestLogitsOnly) {
  // Kept: index 1 (weight 1) and index 2 (weight e^-1): [0, 0.731) and [0.731, 1).
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.0f};
  const Sampling top2{.temperature = 1.0, .top_k = 2};
  EXPECT_EQ(sample_index(logits, top2, 0.0f), 1);
  EXPECT_EQ(sample_index(logits, top2, 0.7f), 1);
  EXPECT_EQ(sample_index(logits, top2, 0.75f), 2);
  EXPECT_EQ(sample_index(logits, top2, 0.999f), 2);
  // Without top-k, the same u = 0.999 lands on the last index.
  EXPECT_EQ(sample_index(logits, {.temperature = 1.0}, 0.999f), 3);
}

TEST(SampleIndex, TopKBreaksTiesTowardTheLowerIndex) {
  const std::vector<float> logits = {2.0f, 5.0f, 2.0f, 2.0f};
  const Sampling top2{.temperature = 1.0, .top_k = 2};
  for (float u : {0.0f, 0.5f, 0.99f}) {
    const int64_t pick = sample_index(logits, top2, u);
    EXPECT_TRUE(pick == 0 || pick == 1) << "u " << u << " picked " << pick;
  }
  EXPECT_EQ(sample_index(logits, top2, 0.001f), 0);  // e^-3 / (1 + e^-3) = 0.047 of [0, 1)
}

TEST(SampleIndex, TopPKeepsTheFewestMostLikelyTokensReachingP) {
  // Probabilities 0.1, 0.5, 0.3, 0.1.
  const std::vector<float> logits = {std::log(0.1f), std::log(0.5f), std::log(0.3f),
                                     std::log(0.1f)};
  // p = 0.4: index 1 alone (0.5 >= 0.4).
  for (float u : {0.0f, 0.5f, 0.99f}) {
    EXPECT_EQ(sample_index(logits, {.temperature = 1.0, .top_p = 0.4}, u), 1);
  }
  // p = 0.7: indices 1 and 2 (0.8), as 0.625 and 0.375 of [0, 1).
  const Sampling p07{.temperature = 1.0, .top_p = 0.7};
  EXPECT_EQ(sample_index(logits, p07, 0.0f), 1);
  EXPECT_EQ(sample_index(logits, p07, 0.6f), 1);
  EXPECT_EQ(sample_index(logits, p07, 0.65f), 2);
  EXPECT_EQ(sample_index(logits, p07, 0.999f), 2);
  // p = 0.85: 1, 2, then of the tied 0 and 3 the lower index: 0 (0.9). In index order 0, 1, 2:
  // [0, 0.111), [0.111, 0.667), [0.667, 1).
  const Sampling p085{.temperature = 1.0, .top_p = 0.85};
  EXPECT_EQ(sample_index(logits, p085, 0.05f), 0);
  EXPECT_EQ(sample_index(logits, p085, 0.2f), 1);
  EXPECT_EQ(sample_index(logits, p085, 0.999f), 2);
}

TEST(SampleIndex, TopKAndTopPTogetherKeepTheSmallerSet) {
  const std::vector<float> logits = {std::log(0.1f), std::log(0.5f), std::log(0.3f),
                                     std::log(0.1f)};
  // top_p 0.85 keeps three, top_k 2 keeps two: indices 1 and 2.
  const Sampling both{.temperature = 1.0, .top_k = 2, .top_p = 0.85};
  EXPECT_EQ(sample_index(logits, both, 0.05f), 1);
  EXPECT_EQ(sample_index(logits, both, 0.999f), 2);
}

}  // namespace
}  // namespace mpipe::train
