// Tests of sampling one byte from logits: temperature 0 is greedy, higher ones follow softmax.
#include "train/generator.h"

#include <gtest/gtest.h>

#include <vector>

namespace mpipe::train {
namespace {

TEST(SampleIndex, TemperatureZeroAlwaysTakesTheLargestLogit) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 2.9f};
  for (float u : {0.0f, 0.3f, 0.99f}) EXPECT_EQ(sample_index(logits, 0.0, u), 1);
}

TEST(SampleIndex, PositiveTemperatureSplitsTheUnitIntervalBySoftmax) {
  // Equal logits: four equal quarters of [0, 1).
  const std::vector<float> logits(4, 1.0f);
  EXPECT_EQ(sample_index(logits, 1.0, 0.1f), 0);
  EXPECT_EQ(sample_index(logits, 1.0, 0.3f), 1);
  EXPECT_EQ(sample_index(logits, 1.0, 0.6f), 2);
  EXPECT_EQ(sample_index(logits, 1.0, 0.9f), 3);
}

}  // namespace
}  // namespace mpipe::train
