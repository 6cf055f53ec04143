// Tests for partition_layers: uniform and manual splits, and every error message.
#include "plan/partition.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace mpipe::plan {
namespace {

const std::string kWhere = "exp.yaml:20: pipeline.partition";

std::string error_of(int num_layers, int num_stages, const std::vector<int>& counts) {
  try {
    partition_layers(num_layers, num_stages, counts, kWhere);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Partition, UniformGivesEarlierStagesTheExtraLayers) {
  EXPECT_EQ(partition_layers(6, 4, {}, kWhere),
            (std::vector<LayerRange>{{0, 2}, {2, 4}, {4, 5}, {5, 6}}));
  EXPECT_EQ(partition_layers(7, 3, {}, kWhere), (std::vector<LayerRange>{{0, 3}, {3, 5}, {5, 7}}));
}

TEST(Partition, UniformWithEvenCountsSplitsEqually) {
  const auto ranges = partition_layers(8, 4, {}, kWhere);
  ASSERT_EQ(ranges.size(), 4u);
  for (size_t s = 0; s < ranges.size(); ++s) {
    EXPECT_EQ(ranges[s].size(), 2);
    EXPECT_EQ(ranges[s].begin, static_cast<int>(2 * s));
  }
}

TEST(Partition, OneStageOwnsEveryLayer) {
  EXPECT_EQ(partition_layers(5, 1, {}, kWhere), (std::vector<LayerRange>{{0, 5}}));
}

TEST(Partition, ManualCountsBecomeContiguousRanges) {
  EXPECT_EQ(partition_layers(6, 3, {1, 4, 1}, kWhere),
            (std::vector<LayerRange>{{0, 1}, {1, 5}, {5, 6}}));
}

TEST(Partition, FewerLayersThanStagesIsAnInputError) {
  EXPECT_EQ(error_of(3, 4, {}),
            "exp.yaml:20: pipeline.partition: the model has 3 layers, fewer than the 4 pipeline "
            "stages");
}

TEST(Partition, WrongNumberOfEntriesIsAnInputError) {
  EXPECT_EQ(error_of(6, 4, {2, 2, 2}),
            "exp.yaml:20: pipeline.partition: 3 entries for 4 pipeline stages");
}

TEST(Partition, ZeroEntryIsAnInputError) {
  EXPECT_EQ(error_of(6, 3, {2, 0, 4}),
            "exp.yaml:20: pipeline.partition: every stage needs at least one layer, got [2, 0, 4]");
}

TEST(Partition, WrongSumIsAnInputError) {
  EXPECT_EQ(error_of(5, 2, {2, 2}),
            "exp.yaml:20: pipeline.partition: [2, 2] sums to 4 layers, but the model has 5");
}

TEST(Partition, ZeroStagesIsAnInternalError) {
  EXPECT_THROW(partition_layers(4, 0, {}, kWhere), Error);
}

}  // namespace
}  // namespace mpipe::plan
