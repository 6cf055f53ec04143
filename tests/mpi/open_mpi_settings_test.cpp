// Multi-rank test of the Open MPI settings comm::Environment chooses: the MPI_Iallreduce
// algorithm, reduce-scatter then allgather (Rabenseifner's), and TCP messages of up to 1 MiB
// sent eagerly; the user's choices where given (the second registration in CMakeLists.txt passes
// `--mca coll_libnbc_iallreduce_algorithm ring --mca btl_tcp_eager_limit 65536`).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "comm/control_variable.h"
#include "comm/iallreduce_algorithm.h"
#include "comm/tcp_eager_limit.h"

namespace mpipe::comm {
namespace {

TEST(OpenMpiSettings, IallreduceIsReduceScatterThenAllgatherUnlessTheUserChoseOne) {
  const char* users_choice = std::getenv("MPIPE_TEST_EXPECTED_IALLREDUCE");
  EXPECT_EQ(iallreduce_algorithm(), users_choice ? std::string(users_choice) : "rabenseifner");
}

TEST(OpenMpiSettings, TcpSendsUpToOneMebibyteEagerlyUnlessTheUserChoseALimit) {
  const char* users_choice = std::getenv("MPIPE_TEST_EXPECTED_TCP_EAGER_LIMIT");
  const long long expected = users_choice ? std::stoll(users_choice) : kTcpEagerBytes;
  EXPECT_EQ(ControlVariable("btl_tcp_eager_limit").read(), expected);
  // (The other two are mpipe's whatever the user's eager limit.)
  EXPECT_EQ(ControlVariable("btl_tcp_rndv_eager_limit").read(), kTcpEagerBytes);
  EXPECT_EQ(ControlVariable("btl_tcp_max_send_size").read(), kTcpEagerBytes);
}

}  // namespace
}  // namespace mpipe::comm
