// Tests for the counter-based RNG: Philox4x32-10 known answers and the CounterRng streams.
#include "core/rng.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

namespace mpipe {
namespace {

using Words = std::array<uint32_t, 4>;

// Known-answer vectors for Philox4x32-10 from Random123's kat_vectors.
TEST(Philox4x32, MatchesRandom123KnownAnswerForZeros) {
  EXPECT_EQ(philox4x32({0, 0}, {0, 0, 0, 0}),
            (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox4x32, MatchesRandom123KnownAnswerForAllOnes) {
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(Philox4x32, MatchesRandom123KnownAnswerForPiDigits) {
  EXPECT_EQ(philox4x32({0xa4093822, 0x299f31d0}, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(CounterRng, DrawsArePureFunctionsOfStreamAndIndex) {
  const CounterRng a(123, RngPurpose::kDropout, 4, 77);
  const CounterRng b(123, RngPurpose::kDropout, 4, 77);
  // Evaluate in different orders: the results must not depend on it.
  std::vector<uint32_t> forward, backward(100);
  for (uint64_t i = 0; i < 100; ++i) forward.push_back(a.bits(i));
  for (uint64_t i = 100; i-- > 0;) backward[i] = b.bits(i);
  EXPECT_EQ(forward, backward);
  EXPECT_EQ(a.uniform(1234567), b.uniform(1234567));
  EXPECT_EQ(a.normal(99), b.normal(99));
}

TEST(CounterRng, BitsAreTheWordsOfOnePhiloxBlockPerFourIndices) {
  const CounterRng rng(5, RngPurpose::kInit, 0, 0);
  // Neighbouring indices within one block and across blocks are all different words.
  std::set<uint32_t> seen;
  for (uint64_t i = 0; i < 64; ++i) seen.insert(rng.bits(i));
  EXPECT_EQ(seen.size(), 64u);
}

int count_differences(const CounterRng& x, const CounterRng& y) {
  int differ = 0;
  for (uint64_t i = 0; i < 256; ++i) differ += x.bits(i) != y.bits(i);
  return differ;
}

TEST(CounterRng, DifferentSeedsPurposesAndStreamsGiveDifferentDraws) {
  const CounterRng base(7, RngPurpose::kDropout, 3, 11);
  EXPECT_EQ(count_differences(base, CounterRng(7, RngPurpose::kDropout, 3, 11)), 0);
  EXPECT_EQ(count_differences(base, CounterRng(8, RngPurpose::kDropout, 3, 11)), 256);
  EXPECT_EQ(count_differences(base, CounterRng(7ull | (1ull << 40), RngPurpose::kDropout, 3, 11)),
            256);
  EXPECT_EQ(count_differences(base, CounterRng(7, RngPurpose::kInit, 3, 11)), 256);
  EXPECT_EQ(count_differences(base, CounterRng(7, RngPurpose::kShuffle, 3, 11)), 256);
  EXPECT_EQ(count_differences(base, CounterRng(7, RngPurpose::kDropout, 4, 11)), 256);
  EXPECT_EQ(count_differences(base, CounterRng(7, RngPurpose::kDropout, 3, 12)), 256);
  EXPECT_EQ(count_differences(base, CounterRng(7, RngPurpose::kDropout, 3, 11ull | (1ull << 32))),
            256);
}

TEST(CounterRng, FillUniformEqualsElementwiseUniformForAnyOffsetAndLength) {
  const CounterRng rng(2024, RngPurpose::kAugment, 9, 5);
  // Lengths around the 64 draws filled at once; the last first index puts a block index that
  // crosses 2^32 inside one such group.
  for (uint64_t first : {0ull, 1ull, 2ull, 3ull, 4ull, 5ull, 7ull, 1000001ull, (1ull << 34) - 30}) {
    for (size_t length :
         {0u, 1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 31u, 63u, 64u, 65u, 67u, 200u, 1000u}) {
      std::vector<float> out(length, -1.0f);
      rng.fill_uniform(out, first);
      for (size_t i = 0; i < length; ++i) {
        ASSERT_EQ(out[i], rng.uniform(first + i)) << "first " << first << " length " << length;
      }
    }
  }
}

TEST(CounterRng, UniformIsInUnitIntervalWithMeanOneHalf) {
  const CounterRng rng(1, RngPurpose::kData, 0, 0);
  constexpr int kDraws = 100000;
  double sum = 0.0;
  float lo = 1.0f, hi = 0.0f;
  for (int i = 0; i < kDraws; ++i) {
    const float u = rng.uniform(static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
  }
  // The standard error of the mean is sqrt(1/12 / 1e5) ~ 0.0009.
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);
  EXPECT_LT(lo, 0.001f);
  EXPECT_GT(hi, 0.999f);
}

TEST(CounterRng, NormalHasMeanZeroAndUnitStandardDeviation) {
  const CounterRng rng(3, RngPurpose::kInit, 1, 2);
  constexpr int kDraws = 100000;
  double sum = 0.0, sum_sq = 0.0;
  for (int i = 0; i < kDraws; ++i) {
    const double z = rng.normal(static_cast<uint64_t>(i));
    ASSERT_TRUE(std::isfinite(z)) << i;
    sum += z;
    sum_sq += z * z;
  }
  const double mean = sum / kDraws;
  const double stddev = std::sqrt(sum_sq / kDraws - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(stddev, 1.0, 0.015);
}

}  // namespace
}  // namespace mpipe
