// Tests for KeyedPermutation (a bijection on [0, n) for any n, keyed by seed and epoch) and the
// keyed EpochSampler order built on it.
#include "data/keyed_permutation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "data/sampler.h"

namespace mpipe::data {
namespace {

// Every position's example, sorted: [0, n) exactly when the permutation is a bijection.
std::vector<int64_t> sorted_images(const KeyedPermutation& permutation) {
  std::vector<int64_t> images;
  for (int64_t i = 0; i < permutation.size(); ++i) images.push_back(permutation(i));
  std::sort(images.begin(), images.end());
  return images;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> values(static_cast<size_t>(n));
  std::iota(values.begin(), values.end(), int64_t{0});
  return values;
}

TEST(KeyedPermutation, IsABijectionForEverySizeUpTo300) {
  for (int64_t n = 1; n <= 300; ++n) {
    ASSERT_EQ(sorted_images(KeyedPermutation(5, 0, n)), iota(n)) << "n = " << n;
  }
}

TEST(KeyedPermutation, IsABijectionForPrimesAndPowersOfTwoAndTheirNeighbours) {
  for (int64_t n : {1009, 4093, 65521, 65535, 65536, 65537, 262144, 1000003}) {
    for (int64_t epoch : {0, 3}) {
      ASSERT_EQ(sorted_images(KeyedPermutation(42, epoch, n)), iota(n))
          << "n = " << n << ", epoch " << epoch;
    }
  }
}

// A random function would map 2^18 positions to about 8 repeated values in [0, 2^32): none
// repeats, and every value is in range. (2^18, not more: under AddressSanitizer the test is a
// hundred times slower.)
TEST(KeyedPermutation, SampledPositionsAroundTwoToThe32MapToDistinctExamplesInRange) {
  const int64_t two_32 = int64_t{1} << 32;
  for (int64_t n : {two_32 - 5, two_32, two_32 + 7, int64_t{10'000'000'019}}) {
    const KeyedPermutation permutation(9, 1, n);
    std::vector<int64_t> images;
    const int64_t samples = int64_t{1} << 18;
    const int64_t stride = n / samples;
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t image = permutation(i * stride + (i % 7));
      ASSERT_GE(image, 0);
      ASSERT_LT(image, n);
      images.push_back(image);
    }
    std::sort(images.begin(), images.end());
    EXPECT_EQ(std::adjacent_find(images.begin(), images.end()), images.end()) << "n = " << n;
  }
}

TEST(KeyedPermutation, IsAPureFunctionOfSeedEpochAndSize) {
  const KeyedPermutation a(7, 2, 1000), b(7, 2, 1000);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(a(i), b(i));
}

TEST(KeyedPermutation, OtherEpochsAndSeedsGiveOtherOrders) {
  const KeyedPermutation base(7, 2, 1000), next_epoch(7, 3, 1000), other_seed(8, 2, 1000);
  int64_t same_epoch = 0, same_seed = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    same_epoch += base(i) == next_epoch(i);
    same_seed += base(i) == other_seed(i);
  }
  // Independent random permutations agree at about one position.
  EXPECT_LT(same_epoch, 20);
  EXPECT_LT(same_seed, 20);
}

TEST(KeyedPermutation, ShufflesRatherThanKeepingTheOrder) {
  const KeyedPermutation permutation(1, 0, 1000);
  int64_t fixed_points = 0;
  for (int64_t i = 0; i < 1000; ++i) fixed_points += permutation(i) == i;
  EXPECT_LT(fixed_points, 20);
}

TEST(EpochSampler, KeyedOrderTakesEachEpochsPositionsFromTheKeyedPermutation) {
  const int64_t n = 37, batch = 5;
  EpochSampler sampler(3, n, ExampleOrder::kKeyed);
  for (int64_t step = 0; step < 3 * n / batch; ++step) {
    const std::vector<int64_t> indices = sampler.batch(step, batch);
    for (int64_t k = 0; k < batch; ++k) {
      const int64_t position = step * batch + k;
      ASSERT_EQ(indices[static_cast<size_t>(k)], KeyedPermutation(3, position / n, n)(position % n))
          << "step " << step;
    }
  }
}

TEST(EpochSampler, KeyedOrderResumesMidEpochWithTheSameBatches) {
  EpochSampler whole(11, 101, ExampleOrder::kKeyed);
  std::vector<std::vector<int64_t>> uninterrupted;
  for (int64_t step = 0; step < 30; ++step) uninterrupted.push_back(whole.batch(step, 8));
  EpochSampler resumed(11, 101, ExampleOrder::kKeyed);
  for (int64_t step = 17; step < 30; ++step) {
    EXPECT_EQ(resumed.batch(step, 8), uninterrupted[static_cast<size_t>(step)]);
  }
}

}  // namespace
}  // namespace mpipe::data
