// Tests for the epoch sampler: permutations, determinism and batches across epoch boundaries.
#include "data/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "data/dataset.h"

namespace mpipe::data {
namespace {

std::vector<int64_t> sorted(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> values(static_cast<size_t>(n));
  std::iota(values.begin(), values.end(), int64_t{0});
  return values;
}

TEST(BatchIndices, EveryIndexAppearsExactlyOncePerEpoch) {
  const int64_t n = 96, batch = 8;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen;
    for (int64_t step = epoch * n / batch; step < (epoch + 1) * n / batch; ++step) {
      const auto indices = batch_indices(7, step, batch, n);
      ASSERT_EQ(indices.size(), static_cast<size_t>(batch));
      seen.insert(seen.end(), indices.begin(), indices.end());
    }
    EXPECT_EQ(sorted(seen), iota(n)) << "epoch " << epoch;
  }
}

TEST(BatchIndices, SameSeedGivesSameBatches) {
  for (int64_t step = 0; step < 5; ++step) {
    EXPECT_EQ(batch_indices(11, step, 16, 1000), batch_indices(11, step, 16, 1000));
  }
}

TEST(BatchIndices, OtherSeedGivesOtherOrder) {
  EXPECT_NE(batch_indices(11, 0, 64, 1000), batch_indices(12, 0, 64, 1000));
}

TEST(BatchIndices, EpochsArePermutedDifferently) {
  EXPECT_NE(epoch_permutation(3, 0, 500), epoch_permutation(3, 1, 500));
  EXPECT_NE(epoch_permutation(3, 0, 500), iota(500));
}

TEST(BatchIndices, BatchCrossingEpochBoundaryTakesTailThenNextEpochHead) {
  const int64_t n = 10, batch = 4;
  const auto first = epoch_permutation(5, 0, n);
  const auto second = epoch_permutation(5, 1, n);
  // Step 2 covers positions 8..11: the last two of epoch 0 and the first two of epoch 1.
  EXPECT_EQ(batch_indices(5, 2, batch, n),
            (std::vector<int64_t>{first[8], first[9], second[0], second[1]}));
}

TEST(BatchIndices, BatchLargerThanDatasetSpansSeveralEpochs) {
  const auto indices = batch_indices(1, 0, 9, 3);
  const auto epoch0 = epoch_permutation(1, 0, 3);
  const auto epoch2 = epoch_permutation(1, 2, 3);
  EXPECT_EQ(std::vector<int64_t>(indices.begin(), indices.begin() + 3), epoch0);
  EXPECT_EQ(std::vector<int64_t>(indices.begin() + 6, indices.end()), epoch2);
}

TEST(BatchIndices, ShuffleIsRoughlyUniform) {
  // Over many epochs, index 0 lands in each of 4 positions about equally often.
  std::vector<int> counts(4, 0);
  for (int64_t epoch = 0; epoch < 4000; ++epoch) {
    const auto order = epoch_permutation(9, epoch, 4);
    ++counts[static_cast<size_t>(std::find(order.begin(), order.end(), 0) - order.begin())];
  }
  for (int count : counts) EXPECT_NEAR(count, 1000, 120);
}

TEST(EpochSampler, MatchesBatchIndices) {
  EpochSampler sampler(21, 37);
  for (int64_t step = 0; step < 30; ++step) {
    EXPECT_EQ(sampler.batch(step, 5), batch_indices(21, step, 5, 37)) << "step " << step;
  }
  // Going back to an earlier epoch recomputes it.
  EXPECT_EQ(sampler.batch(0, 5), batch_indices(21, 0, 5, 37));
}

TEST(EpochSampler, HandlesLargeDatasets) {
  const int64_t n = 2'500'000;
  EpochSampler sampler(4, n);
  const auto indices = sampler.batch(100, 256);
  ASSERT_EQ(indices.size(), 256u);
  for (int64_t index : indices) {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, n);
  }
  EXPECT_EQ(indices, sampler.batch(100, 256));
}

}  // namespace
}  // namespace mpipe::data
