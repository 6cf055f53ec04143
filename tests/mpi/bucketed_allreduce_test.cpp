// Multi-rank tests of comm::BucketedAllreduce (run with 4 ranks): the same bits as one allreduce
// of the whole buffer with 2 ranks, each bucket summed as if alone with 4, uneven buckets,
// the start order, progress without a wait, the pairwise tree's bits, and the reduce-scatter's
// (each rank's shard the tree's bits, with empty and uneven shards).
#include "comm/bucketed_allreduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/error.h"

namespace mpipe::comm {
namespace {

// Values whose sums round, so a different order of additions would show in the bits.
std::vector<float> random_values(int seed, size_t n) {
  std::mt19937 generator(static_cast<unsigned>(seed) * 7919u + 1u);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(n);
  for (float& v : values) v = uniform(generator) * (1.0f + static_cast<float>(seed));
  return values;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Uneven buckets: one value, a few, one, big ones.
const std::vector<size_t> kBegins = {0, 1, 8, 9, 1000, 65536};
constexpr size_t kValues = 100003;

TEST(BucketedAllreduce, WithTwoRanksGivesTheBitsOfOneAllreduceOfTheWholeBuffer) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  const Communicator pair = world.split(rank / 2, rank, "a pair");
  ASSERT_EQ(pair.size(), 2);
  std::vector<float> data = random_values(rank, kValues);
  std::vector<float> whole = data;
  pair.allreduce_sum(whole);
  const std::vector<float> peer = random_values(rank ^ 1, kValues);
  std::vector<float> by_hand(kValues);
  for (size_t i = 0; i < kValues; ++i) by_hand[i] = data[i] + peer[i];
  EXPECT_TRUE(same_bits(whole, by_hand));  // with 2 ranks every algorithm computes a + b

  BucketedAllreduce buckets(pair, cut_into_buckets(data, kBegins));
  buckets.start_from(5);  // [65536, end)
  buckets.progress();
  buckets.start_from(2);  // [8, 65536)
  buckets.finish();
  EXPECT_EQ(buckets.num_completed(), kBegins.size());
  EXPECT_TRUE(same_bits(data, whole));
}

TEST(BucketedAllreduce, WithFourRanksSumsEachBucketAsIfItWereReducedAlone) {
  const Communicator world = Communicator::world();
  ASSERT_EQ(world.size(), 4);
  std::vector<float> data = random_values(world.rank(), kValues);
  std::vector<float> expected;
  for (size_t b = 0; b < kBegins.size(); ++b) {
    const size_t end = b + 1 < kBegins.size() ? kBegins[b + 1] : kValues;
    std::vector<float> bucket(data.begin() + static_cast<std::ptrdiff_t>(kBegins[b]),
                              data.begin() + static_cast<std::ptrdiff_t>(end));
    world.allreduce_sum(bucket);
    expected.insert(expected.end(), bucket.begin(), bucket.end());
  }
  BucketedAllreduce buckets(world, cut_into_buckets(data, kBegins));
  for (size_t b = kBegins.size(); b-- > 0;) {
    buckets.start_from(b);
    buckets.progress();
  }
  buckets.finish();
  EXPECT_TRUE(same_bits(data, expected));
  // And every rank holds the same bits.
  const std::span<const char> bytes(reinterpret_cast<const char*>(data.data()),
                                    data.size() * sizeof(float));
  const std::vector<char> all = world.allgather(bytes);
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(std::memcmp(all.data(), all.data() + r * bytes.size(), bytes.size()), 0) << r;
  }
}

TEST(BucketedAllreduce, OverTheTreeLevelsEveryRankHoldsTheSumOfPairsOfPairs) {
  const Communicator world = Communicator::world();
  ASSERT_EQ(world.size(), 4);
  // Big enough that Open MPI's own allreduce of 4 ranks takes another order (its ring).
  constexpr size_t kMany = size_t{1} << 21;
  const std::vector<size_t> begins = {0, 1, 8, 9, 1000, 65536, size_t{1} << 20};
  std::vector<float> data = random_values(world.rank(), kMany);
  const std::vector<Communicator> levels = tree_levels(world);
  ASSERT_EQ(levels.size(), 2u);
  BucketedAllreduce buckets({&levels[0], &levels[1]}, cut_into_buckets(data, begins));
  for (size_t b = begins.size(); b-- > 0;) {
    buckets.start_from(b);
    buckets.progress();
  }
  buckets.finish();
  EXPECT_EQ(buckets.num_completed(), begins.size());
  std::vector<std::vector<float>> s;
  for (int r = 0; r < 4; ++r) s.push_back(random_values(r, kMany));
  std::vector<float> expected(kMany);
  for (size_t i = 0; i < kMany; ++i) expected[i] = (s[0][i] + s[1][i]) + (s[2][i] + s[3][i]);
  EXPECT_TRUE(same_bits(data, expected));
}

// Every bucket's shard begins (shard order, relative to the bucket) from the buffer's.
std::vector<std::vector<size_t>> bucket_shards(const std::vector<size_t>& buckets, size_t size,
                                               const std::vector<size_t>& shards) {
  std::vector<std::vector<size_t>> cuts;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const size_t end = b + 1 < buckets.size() ? buckets[b + 1] : size;
    std::vector<size_t>& mine = cuts.emplace_back();
    for (size_t begin : shards) {
      mine.push_back(std::clamp(begin, buckets[b], end) - buckets[b]);
    }
  }
  return cuts;
}

// The reduce-scatter over `levels` of each rank's random_values, against the tree allreduce over
// the same levels: this rank's shard `shard` holds the same bits.
void expect_scatter_keeps_the_tree_bits(const Communicator& group,
                                        const std::vector<const Communicator*>& levels,
                                        const std::vector<size_t>& shards, size_t shard) {
  constexpr size_t kMany = size_t{1} << 20;
  const std::vector<size_t> begins = {0, 1, 8, 9, 1000, 65536, 300001, 600000};
  std::vector<float> data = random_values(group.rank(), kMany);
  std::vector<float> expected = data;
  BucketedAllreduce tree(levels, cut_into_buckets(expected, begins));
  tree.finish();
  BucketedAllreduce scatter(levels, cut_into_buckets(data, begins),
                            bucket_shards(begins, kMany, shards));
  for (size_t b = begins.size(); b-- > 0;) {
    scatter.start_from(b);
    scatter.progress();
  }
  scatter.finish();
  EXPECT_EQ(scatter.num_completed(), begins.size());
  const size_t from = shards[shard], to = shards[shard + 1];
  EXPECT_EQ(std::memcmp(data.data() + from, expected.data() + from, (to - from) * sizeof(float)), 0)
      << "shard " << shard << " [" << from << ", " << to << ")";
}

TEST(BucketedAllreduce, ScatteredOverTwoRanksEachHoldsItsShardOfTheSum) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  const Communicator pair = world.split(rank / 2, rank, "a pair");
  const std::vector<Communicator> levels = tree_levels(pair);
  // Uneven, cut inside buckets; and one empty shard.
  expect_scatter_keeps_the_tree_bits(pair, {&levels[0]}, {0, 70000, size_t{1} << 20},
                                     static_cast<size_t>(pair.rank()));
  expect_scatter_keeps_the_tree_bits(pair, {&levels[0]}, {0, 0, size_t{1} << 20},
                                     static_cast<size_t>(pair.rank()));
}

TEST(BucketedAllreduce, ScatteredOverFourRanksEachHoldsItsShardOfPairsOfPairs) {
  const Communicator world = Communicator::world();
  ASSERT_EQ(world.size(), 4);
  const std::vector<Communicator> levels = tree_levels(world);
  // Rank r holds shard r with its two bits reversed (1 -> 2, 2 -> 1).
  const int rank = world.rank();
  const auto shard = static_cast<size_t>(((rank & 1) << 1) | (rank >> 1));
  // Even-ish, uneven with an empty shard, and everything in the last.
  for (const std::vector<size_t>& shards :
       {std::vector<size_t>{0, 262144, 524288, 786432, size_t{1} << 20},
        std::vector<size_t>{0, 5, 5, 600000, size_t{1} << 20},
        std::vector<size_t>{0, 0, 0, 0, size_t{1} << 20}}) {
    expect_scatter_keeps_the_tree_bits(world, {&levels[0], &levels[1]}, shards, shard);
  }
}

TEST(BucketedAllreduce, ScatteredCutsMustCoverEachBucketOverThePowerOfTwo) {
  const Communicator world = Communicator::world();
  const std::vector<Communicator> levels = tree_levels(world);
  std::vector<float> data(10);
  try {
    BucketedAllreduce bad({&levels[0], &levels[1]}, cut_into_buckets(data, {0}), {{0, 5, 10}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "BucketedAllreduce: bucket 0 of 10 floats: 3 shard begins over 2 levels");
  }
}

TEST(BucketedAllreduce, TreeLevelsNeedAPowerOfTwoOfRanks) {
  const Communicator world = Communicator::world();
  const Communicator three = world.split(world.rank() < 3 ? 0 : 1, world.rank(), "three");
  if (world.rank() < 3) {
    try {
      tree_levels(three);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "tree_levels: 3 ranks is not a power of two of at least 2");
    }
  }
}

TEST(BucketedAllreduce, StartsTheBucketsFromTheGivenOneToTheLast) {
  const Communicator world = Communicator::world();
  std::vector<float> data(10, 1.0f);
  BucketedAllreduce buckets(world, cut_into_buckets(data, {0, 4, 7}));
  EXPECT_EQ(buckets.num_started(), 0u);
  buckets.start_from(3);
  EXPECT_EQ(buckets.num_started(), 0u);
  buckets.start_from(2);
  EXPECT_EQ(buckets.num_started(), 1u);
  buckets.start_from(2);
  EXPECT_EQ(buckets.num_started(), 1u);
  buckets.start_from(1);
  EXPECT_EQ(buckets.num_started(), 2u);
  buckets.finish();
  EXPECT_EQ(buckets.num_started(), 3u);
  EXPECT_EQ(data, std::vector<float>(10, 4.0f));
}

// A rank with several chunks reduces the buckets of several buffers, each as if alone.
TEST(BucketedAllreduce, SumsTheBucketsOfSeveralBuffers) {
  const Communicator world = Communicator::world();
  std::vector<float> first = random_values(world.rank(), 1000);
  std::vector<float> second = random_values(world.rank() + 4, 70000);
  std::vector<float> first_expected = first, second_expected = second;
  world.allreduce_sum(first_expected);
  world.allreduce_sum(second_expected);
  std::vector<std::span<float>> buckets = cut_into_buckets(first, {0, 10});
  for (std::span<float> bucket : cut_into_buckets(second, {0, 65536})) buckets.push_back(bucket);
  BucketedAllreduce reduction(world, buckets);
  reduction.start_from(2);  // the second buffer's
  reduction.finish();
  EXPECT_EQ(reduction.num_completed(), 4u);
  EXPECT_TRUE(same_bits(first, first_expected));
  EXPECT_TRUE(same_bits(second, second_expected));
}

TEST(BucketedAllreduce, ProgressCompletesTheBucketsWithoutAWait) {
  const Communicator world = Communicator::world();
  std::vector<float> data = random_values(world.rank(), kValues);
  BucketedAllreduce buckets(world, cut_into_buckets(data, kBegins));
  buckets.start_from(0);
  // Compute stands in for the layers between the calls: progress() alone must finish the job.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (buckets.num_completed() < kBegins.size() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    buckets.progress();
  }
  EXPECT_EQ(buckets.num_completed(), kBegins.size());
  buckets.finish();
}

TEST(BucketedAllreduce, BeginsThatDoNotAscendAreRefused) {
  std::vector<float> data(10);
  try {
    cut_into_buckets(data, {0, 7, 4});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "BucketedAllreduce: bucket 2 begins at 4: begins must ascend within 10 values");
  }
  EXPECT_THROW(cut_into_buckets(data, {1, 4}), Error);
  EXPECT_THROW(cut_into_buckets(data, {0, 10}), Error);
}

}  // namespace
}  // namespace mpipe::comm
