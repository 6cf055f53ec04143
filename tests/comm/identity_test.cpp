// Tests of the start-up identity check (pure): which rank runs another mpipe or MPI library.
#include <gtest/gtest.h>

#include "comm/handshake.h"

namespace mpipe::comm {
namespace {

RankIdentity rank_on(const std::string& host, const std::string& version,
                     const std::string& library = "Open MPI v4.1.4") {
  return {.host = host, .version = version, .mpi_library = library};
}

TEST(IdentityMismatch, RanksRunningRank0sBuildPass) {
  EXPECT_FALSE(identity_mismatch({rank_on("a", "0.1.0-g1"), rank_on("b", "0.1.0-g1")}));
  EXPECT_FALSE(identity_mismatch({rank_on("a", "0.1.0-g1")}));
}

TEST(IdentityMismatch, TheLowestRankWithAnotherVersionIsNamedWithItsHost) {
  EXPECT_EQ(identity_mismatch({rank_on("a", "0.1.0-g14"), rank_on("a", "0.1.0-g14"),
                               rank_on("b", "0.1.0-g12"), rank_on("c", "0.0.9")}),
            "rank 2 (host b): mpipe version 0.1.0-g12 differs from rank 0's 0.1.0-g14 (host a)");
}

TEST(IdentityMismatch, AnotherMpiLibraryIsRefused) {
  EXPECT_EQ(identity_mismatch({rank_on("a", "1"), rank_on("b", "1", "MPICH 4.0")}),
            "rank 1 (host b): MPI library 'MPICH 4.0' differs from rank 0's 'Open MPI v4.1.4' "
            "(host a)");
}

}  // namespace
}  // namespace mpipe::comm
