// Tests of the tied copies' exchange plan on shards (pure: no MPI): each replica's part of a copy
// follows its shard (bit-reversed replicas at D = 4), the transfers of a worked example with
// partial and empty intersections, and for D = 2 and 4 with two uses on two ranks and three uses
// on three (a shard empty, a copy inside one shard or cut by several), every part of every copy
// receives each other use's elements exactly once, from the replica whose part holds them.
#include "train/tied_shard_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace mpipe::train {
namespace {

TEST(TiedShardPlan, AReplicasPartIsItsShardClippedToTheCopy) {
  // A buffer of 100 cut at 0, 10, 30, 30, 100 (shard 2 empty); the copy is [20, 60).
  const TiedCopyPlace place{.pipeline_rank = 1, .offset = 20, .shard_begins = {0, 10, 30, 30, 100}};
  // Replica r holds shard r's bits reversed: 0 → 0, 1 → 2, 2 → 1, 3 → 3.
  EXPECT_EQ(owned_part(place, 40, 0, 4), (MatrixPart{0, 0}));
  EXPECT_EQ(owned_part(place, 40, 1, 4), (MatrixPart{10, 10}));
  EXPECT_EQ(owned_part(place, 40, 2, 4), (MatrixPart{0, 10}));
  EXPECT_EQ(owned_part(place, 40, 3, 4), (MatrixPart{10, 40}));
}

TEST(TiedShardPlan, TwoCopiesCutAtDifferentPlacesExchangeTheirIntersections) {
  // The embedding's copy at 20 of a buffer cut at 32: replica 0 holds [0, 12), replica 1 [12, 40).
  // The head's at 60 of a buffer cut at 80: replica 0 holds [0, 20), replica 1 [20, 40).
  const std::vector<TiedCopyPlace> places = {
      {.pipeline_rank = 0, .offset = 20, .shard_begins = {0, 32, 100}},
      {.pipeline_rank = 1, .offset = 60, .shard_begins = {0, 80, 120}}};
  const std::vector<TiedTransfer> expected = {
      {.from_use = 1, .from_replica = 0, .to_use = 0, .to_replica = 0, .part = {0, 12}},
      {.from_use = 1, .from_replica = 0, .to_use = 0, .to_replica = 1, .part = {12, 20}},
      {.from_use = 1, .from_replica = 1, .to_use = 0, .to_replica = 1, .part = {20, 40}},
      {.from_use = 0, .from_replica = 0, .to_use = 1, .to_replica = 0, .part = {0, 12}},
      {.from_use = 0, .from_replica = 1, .to_use = 1, .to_replica = 0, .part = {12, 20}},
      {.from_use = 0, .from_replica = 1, .to_use = 1, .to_replica = 1, .part = {20, 40}}};
  EXPECT_EQ(tied_shard_transfers(places, 40, 2), expected);
}

// Every replica's part of every use receives each other use's elements once, each from the
// replica whose part of that use holds them.
void expect_exact_cover(const std::vector<TiedCopyPlace>& places, int64_t size, int replicas) {
  const std::vector<TiedTransfer> transfers = tied_shard_transfers(places, size, replicas);
  const auto uses = static_cast<int>(places.size());
  for (int u = 0; u < uses; ++u) {
    std::vector<int> owners(static_cast<size_t>(size), 0);  // the replicas holding each element
    for (int a = 0; a < replicas; ++a) {
      const MatrixPart mine = owned_part(places[static_cast<size_t>(u)], size, a, replicas);
      for (int64_t i = mine.begin; i < mine.end; ++i) ++owners[static_cast<size_t>(i)];
      for (int v = 0; v < uses; ++v) {
        if (v == u) continue;
        std::vector<int> received(static_cast<size_t>(size), 0);
        for (const TiedTransfer& t : transfers) {
          if (t.to_use != u || t.to_replica != a || t.from_use != v) continue;
          const MatrixPart theirs =
              owned_part(places[static_cast<size_t>(v)], size, t.from_replica, replicas);
          EXPECT_FALSE(t.part.empty());
          EXPECT_TRUE(theirs.begin <= t.part.begin && t.part.end <= theirs.end);
          for (int64_t i = t.part.begin; i < t.part.end; ++i) ++received[static_cast<size_t>(i)];
        }
        for (int64_t i = 0; i < size; ++i) {
          ASSERT_EQ(received[static_cast<size_t>(i)], mine.begin <= i && i < mine.end ? 1 : 0)
              << "use " << u << " replica " << a << " from use " << v << " element " << i;
        }
      }
    }
    for (int64_t i = 0; i < size; ++i) ASSERT_EQ(owners[static_cast<size_t>(i)], 1);
  }
}

TEST(TiedShardPlan, EveryPartReceivesEveryOtherUsesElementsOnce) {
  // D = 2, K = 2: the embedding's copy cut by the shard, the head's inside shard 1.
  expect_exact_cover({{.pipeline_rank = 0, .offset = 0, .shard_begins = {0, 96, 200}},
                      {.pipeline_rank = 1, .offset = 120, .shard_begins = {0, 64, 260}}},
                     128, 2);
  // D = 4, K = 2: both copies cut, one shard empty, the copies at different offsets.
  expect_exact_cover({{.pipeline_rank = 0, .offset = 16, .shard_begins = {0, 48, 48, 112, 300}},
                      {.pipeline_rank = 1, .offset = 64, .shard_begins = {0, 64, 96, 160, 192}}},
                     128, 4);
  // D = 2, K = 3: three uses (two embeddings and a head) on three ranks.
  expect_exact_cover({{.pipeline_rank = 0, .offset = 0, .shard_begins = {0, 40, 150}},
                      {.pipeline_rank = 1, .offset = 8, .shard_begins = {0, 100, 110}},
                      {.pipeline_rank = 2, .offset = 30, .shard_begins = {0, 32, 130}}},
                     100, 2);
  // D = 4, K = 3: three uses, the last copy inside one shard, an empty shard in the first.
  expect_exact_cover({{.pipeline_rank = 0, .offset = 0, .shard_begins = {0, 0, 30, 70, 150}},
                      {.pipeline_rank = 1, .offset = 8, .shard_begins = {0, 20, 50, 80, 110}},
                      {.pipeline_rank = 2, .offset = 30, .shard_begins = {0, 10, 20, 30, 130}}},
                     100, 4);
}

}  // namespace
}  // namespace mpipe::train
