// Tests for peer copies as plans: the peer rule, the copies of a checkpoint, the committing ranks
// and a resume's gather plan.
#include "checkpoint/shard_copies.h"

#include <gtest/gtest.h>

namespace mpipe::checkpoint {
namespace {

using Hosts = std::vector<std::string>;

TEST(PeerRank, IsTheNextRankOnAnotherHost) {
  const Hosts one_each = {"h1", "h2", "h3"};
  EXPECT_EQ(peer_rank(one_each, 0), 1);
  EXPECT_EQ(peer_rank(one_each, 1), 2);
  EXPECT_EQ(peer_rank(one_each, 2), 0);  // wraps around
  const Hosts two_each = {"h1", "h1", "h2", "h2"};
  EXPECT_EQ(peer_rank(two_each, 0), 2);  // rank 1 shares rank 0's host
  EXPECT_EQ(peer_rank(two_each, 1), 2);
  EXPECT_EQ(peer_rank(two_each, 2), 0);
  EXPECT_EQ(peer_rank(two_each, 3), 0);
}

TEST(PeerRank, IsNoneOnOneHost) {
  EXPECT_EQ(peer_rank({"h1", "h1", "h1"}, 1), std::nullopt);
  EXPECT_EQ(peer_rank({"h1"}, 0), std::nullopt);
}

TEST(ShardCopies, EachShardGoesToItsWritersPeer) {
  // K=2 x D=2 on two hosts: replica 0 (ranks 0 and 1, both on h1) writes the shards.
  EXPECT_EQ(plan_shard_copies({"h1", "h1", "h2", "h2"},
                              {{.rank = 0, .stage = 0}, {.rank = 1, .stage = 1}}),
            (std::vector<FileTransfer>{{.file = 0, .from = 0, .to = 2},
                                       {.file = 1, .from = 1, .to = 2}}));
  // Two chunks per rank: each of its shards.
  EXPECT_EQ(plan_shard_copies({"h1", "h2"}, {{.rank = 0, .stage = 0},
                                             {.rank = 0, .stage = 2},
                                             {.rank = 1, .stage = 1},
                                             {.rank = 1, .stage = 3}}),
            (std::vector<FileTransfer>{{.file = 0, .from = 0, .to = 1},
                                       {.file = 2, .from = 0, .to = 1},
                                       {.file = 1, .from = 1, .to = 0},
                                       {.file = 3, .from = 1, .to = 0}}));
  EXPECT_TRUE(
      plan_shard_copies({"h1", "h1"}, {{.rank = 0, .stage = 0}, {.rank = 1, .stage = 1}}).empty());
}

TEST(CommittingRanks, AreTheLowestHolderOfEachHost) {
  EXPECT_EQ(committing_ranks({"h1", "h2", "h3"}, {0, 1, 2, 1, 2, 0}), (std::vector<int>{0, 1, 2}));
  // h2's ranks 2 and 3 hold copies only; rank 1 (h1) is not the lowest on h1.
  EXPECT_EQ(committing_ranks({"h1", "h1", "h2", "h2"}, {1, 0, 3, 2}), (std::vector<int>{0, 2}));
  // A host whose ranks hold nothing commits nothing.
  EXPECT_EQ(committing_ranks({"h1", "h2", "h3"}, {0}), (std::vector<int>{0}));
}

TEST(GatherPlan, EachMissingFileComesFromItsLowestHolder) {
  // K=3 on h1-h3 with peer copies, resumed on h1 and h3: h1 (now rank 0) holds stage 0 and the
  // copy of stage 2; h3 (now rank 1) stage 2 and the copy of stage 1.
  const GatherPlan plan = plan_gather({{0, 2}, {2, 1}}, 3);
  EXPECT_EQ(plan.transfers, (std::vector<FileTransfer>{{.file = 0, .from = 0, .to = 1},
                                                       {.file = 1, .from = 1, .to = 0}}));
  EXPECT_TRUE(plan.unheld.empty());
}

TEST(GatherPlan, NamesTheFilesNoRankHolds) {
  const GatherPlan plan = plan_gather({{0, 2, 7}, {0}}, 3);  // 7: not a file of this step
  EXPECT_EQ(plan.transfers, (std::vector<FileTransfer>{{.file = 2, .from = 0, .to = 1}}));
  EXPECT_EQ(plan.unheld, (std::vector<int>{1}));
}

TEST(GatherPlan, MovesNothingWhenEveryRankHoldsEverything) {
  const GatherPlan plan = plan_gather({{1, 0}, {0, 1}, {1, 0}}, 2);
  EXPECT_TRUE(plan.transfers.empty());
  EXPECT_TRUE(plan.unheld.empty());
}

}  // namespace
}  // namespace mpipe::checkpoint
