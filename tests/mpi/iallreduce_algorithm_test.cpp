// Multi-rank test of the MPI_Iallreduce algorithm comm::Environment chooses: reduce-scatter then
// allgather (Rabenseifner's) by default, the user's choice where one was given (the second
// registration in CMakeLists.txt passes `--mca coll_libnbc_iallreduce_algorithm ring`).
#include "comm/iallreduce_algorithm.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace mpipe::comm {
namespace {

TEST(IallreduceAlgorithm, IsReduceScatterThenAllgatherUnlessTheUserChoseOne) {
  const char* users_choice = std::getenv("MPIPE_TEST_EXPECTED_IALLREDUCE");
  EXPECT_EQ(iallreduce_algorithm(), users_choice ? std::string(users_choice) : "rabenseifner");
}

}  // namespace
}  // namespace mpipe::comm
