// Tests of the start-up placement line (pure): CPU lists, bound and unbound ranks, several hosts,
// and a rank given fewer CPUs than OpenMP threads.
#include "comm/rank_placement.h"

#include <gtest/gtest.h>

namespace mpipe::comm {
namespace {

RankPlacement on(const std::string& host, const std::string& cpus, int count, int host_cpus) {
  return {.host = host, .cpus = cpus, .count = count, .host_cpus = host_cpus};
}

TEST(CpuList, RunsOfConsecutiveCpusBecomeRanges) {
  EXPECT_EQ(cpu_list({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(cpu_list({5}), "5");
  EXPECT_EQ(cpu_list({0, 2, 3}), "0,2-3");
  EXPECT_EQ(cpu_list({}), "");
}

TEST(DescribePlacement, BoundRanksListTheirCpusInRankOrder) {
  EXPECT_EQ(describe_placement({on("a", "0-1", 2, 16), on("a", "2-3", 2, 16)}, 2),
            "placement: 2 ranks on 1 host (a), 2 OpenMP threads each, CPUs by rank: 0-1 | 2-3");
}

TEST(DescribePlacement, RanksThatMayRunAnywhereAreSaidToBeNotBound) {
  EXPECT_EQ(describe_placement({on("a", "0-15", 16, 16), on("a", "0-15", 16, 16)}, 1),
            "placement: 2 ranks on 1 host (a), 1 OpenMP thread each, not bound to CPUs (each may "
            "run on all 16 of its host's)");
  EXPECT_EQ(describe_placement({on("a", "0-1", 2, 2), on("b", "0-3", 4, 4)}, 1),
            "placement: 2 ranks on 2 hosts, 1 OpenMP thread each, not bound to CPUs (each may run "
            "on all of its host's)");
}

TEST(DescribePlacement, SeveralHostsNameEachBeforeItsFirstRank) {
  EXPECT_EQ(describe_placement({on("a", "0", 1, 4), on("a", "1", 1, 4), on("b", "0", 1, 4)}, 1),
            "placement: 3 ranks on 2 hosts, 1 OpenMP thread each, CPUs by rank: a: 0 | 1 | b: 0");
}

TEST(OversubscribedRank, TheFirstRankWithFewerCpusThanThreadsIsNamed) {
  EXPECT_EQ(oversubscribed_rank({on("a", "0-1", 2, 4), on("a", "2", 1, 4), on("a", "3", 1, 4)}, 2),
            "rank 1 (host a) runs 2 OpenMP threads on 1 CPU (2): they share it");
  EXPECT_EQ(oversubscribed_rank({on("a", "0-3", 4, 4)}, 8),
            "rank 0 (host a) runs 8 OpenMP threads on 4 CPUs (0-3): they share them");
  EXPECT_EQ(oversubscribed_rank({on("a", "0-1", 2, 4), on("a", "2-3", 2, 4)}, 2), "");
}

}  // namespace
}  // namespace mpipe::comm
