// Multi-rank tests of comm (run with 4 ranks): point-to-point, collectives, topology and groups.
#include <gtest/gtest.h>

#include <numeric>

#include "comm/agree.h"
#include "comm/communicator.h"
#include "comm/topology.h"
#include "core/error.h"

namespace mpipe::comm {
namespace {

TEST(Communicator, WorldHasFourRanks) {
  const Communicator world = Communicator::world();
  ASSERT_EQ(world.size(), 4);
  EXPECT_GE(world.rank(), 0);
  EXPECT_LT(world.rank(), 4);
}

TEST(Communicator, RingOfIsendIrecvDeliversByTag) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  const int size = world.size();
  const int next = (rank + 1) % size;
  const int previous = (rank + size - 1) % size;
  // Two messages per neighbour pair, received in the opposite order of their sending:
  // tags, not arrival order, decide which buffer gets which payload.
  std::vector<float> first(3), second(5);
  Request receive_second = world.irecv(second, previous, 2);
  Request receive_first = world.irecv(first, previous, 1);
  {
    std::vector<float> payload1 = {float(rank), 1.f, 2.f};
    std::vector<float> payload2(5, 10.f * rank);
    Request send1 = world.isend(payload1, next, 1);
    Request send2 = world.isend(payload2, next, 2);
    payload1.assign(3, -1.f);  // the request owns a copy: changing ours must not matter
    EXPECT_TRUE(send1.active());
    send1.wait();
    EXPECT_FALSE(send1.active());
  }  // send2's destructor waits
  receive_first.wait();
  while (!receive_second.test()) {
  }
  EXPECT_EQ(first, (std::vector<float>{float(previous), 1.f, 2.f}));
  EXPECT_EQ(second, std::vector<float>(5, 10.f * previous));
  EXPECT_FALSE(receive_second.active());
}

TEST(Communicator, ReceiveOfTheWrongSizeThrows) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  const int size = world.size();
  std::vector<float> bigger(4);
  Request receive = world.irecv(bigger, (rank + size - 1) % size, 7);
  Request send = world.isend(std::vector<float>{1.f, 2.f}, (rank + 1) % size, 7);
  EXPECT_THROW(receive.wait(), Error);
  send.wait();
}

TEST(Communicator, MovedRequestIsInactiveAndTheNewOwnerCompletes) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  std::vector<float> got(1);
  Request receive = world.irecv(got, rank, 3);  // to self
  Request send = world.isend(std::vector<float>{42.f}, rank, 3);
  Request moved = std::move(receive);
  EXPECT_FALSE(receive.active());  // NOLINT(bugprone-use-after-move)
  moved.wait();
  send.wait();
  EXPECT_EQ(got[0], 42.f);
}

TEST(Communicator, AllreduceSumsOverRanks) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  std::vector<float> floats = {1.f, float(rank)};
  world.allreduce_sum(floats);
  EXPECT_EQ(floats, (std::vector<float>{4.f, 6.f}));
  std::vector<double> doubles = {0.5 * rank};
  world.allreduce_sum(doubles);
  EXPECT_DOUBLE_EQ(doubles[0], 3.0);
  std::vector<float> async = {float(rank * rank)};
  Request request = world.iallreduce_sum(async);
  request.wait();
  EXPECT_EQ(async[0], 14.f);
}

TEST(Communicator, AllgathervConcatenatesUnevenContributionsInRankOrder) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  std::vector<double> mine(static_cast<std::size_t>(rank), double(rank));  // rank 0 sends none
  const std::vector<double> all = world.allgatherv(mine);
  EXPECT_EQ(all, (std::vector<double>{1, 2, 2, 3, 3, 3}));
}

TEST(Communicator, GathervConcatenatesEveryRanksFloatsOnTheRootAlone) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  std::vector<float> mine(static_cast<std::size_t>(rank), float(rank));  // rank 0 sends none
  const std::vector<float> all = world.gatherv(mine, 1);
  if (rank == 1) {
    EXPECT_EQ(all, (std::vector<float>{1, 2, 2, 3, 3, 3}));
  } else {
    EXPECT_TRUE(all.empty());
  }
}

TEST(Communicator, GathervIntoTheRootsBufferFillsItInRankOrder) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  std::vector<float> mine(static_cast<std::size_t>(rank), float(rank));  // rank 0 sends none
  std::vector<float> all(rank == 1 ? 6 : 0, -1.0f);
  world.gatherv(mine, 1, all);
  if (rank == 1) {
    EXPECT_EQ(all, (std::vector<float>{1, 2, 2, 3, 3, 3}));
  }
}

TEST(Communicator, AllgathervInPlaceGivesEveryRankEveryRanksPart) {
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  // Uneven parts, rank 2's empty, in place of their slots of one buffer.
  const std::vector<int64_t> begins = {0, 3, 4, 4, 9};
  std::vector<float> data(10, -1.0f);
  for (auto i = begins[static_cast<size_t>(rank)]; i < begins[static_cast<size_t>(rank) + 1]; ++i) {
    data[static_cast<size_t>(i)] = static_cast<float>(10 * rank + i);
  }
  world.allgatherv_in_place(data, begins);
  EXPECT_EQ(data, (std::vector<float>{0, 1, 2, 13, 34, 35, 36, 37, 38, -1}));
  try {
    world.allgatherv_in_place(data, std::vector<int64_t>{0, 3, 4, 11, 11});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "MPI_Iallgatherv: 5 part begins over 4 ranks and 10 floats");
  }
}

TEST(Communicator, BroadcastCopiesTheRootsData) {
  const Communicator world = Communicator::world();
  std::vector<double> data = {double(world.rank()), 7.0};
  world.broadcast(data, 2);
  EXPECT_EQ(data, (std::vector<double>{2.0, 7.0}));
  std::vector<float> floats = {float(world.rank())};
  world.broadcast(floats, 3);
  EXPECT_EQ(floats[0], 3.f);
}

TEST(Communicator, BroadcastOfAStringCopiesTheRootsBytesWhateverTheirLength) {
  const Communicator world = Communicator::world();
  std::string text =
      world.rank() == 1 ? std::string("name\0{\"yaml\": 1}", 16) : "longer text here";
  world.broadcast(text, 1);
  EXPECT_EQ(text, std::string("name\0{\"yaml\": 1}", 16));
  std::string empty = world.rank() == 0 ? "" : "not empty";
  world.broadcast(empty, 0);
  EXPECT_EQ(empty, "");
}

TEST(Communicator, AllgatherOfEqualBlocksIsInRankOrder) {
  const Communicator world = Communicator::world();
  const std::vector<char> mine = {char('a' + world.rank()), '-'};
  const std::vector<char> all = world.allgather(mine);
  EXPECT_EQ(std::string(all.begin(), all.end()), "a-b-c-d-");
}

TEST(Communicator, SplitKnowsTheWorldRankOfEachMember) {
  const Communicator world = Communicator::world();
  const Communicator odd_even = world.split(world.rank() % 2, world.rank(), "the odd or even");
  EXPECT_EQ(world.world_rank(3), 3);
  EXPECT_EQ(odd_even.world_rank(1), 2 + world.rank() % 2);
}

TEST(Communicator, AllTrueIsFalseIfAnyRankSaysFalse) {
  const Communicator world = Communicator::world();
  EXPECT_TRUE(world.all_true(true));
  EXPECT_FALSE(world.all_true(world.rank() != 2));
}

TEST(Communicator, MpiErrorsBecomeExceptionsNamingTheCall) {
  const Communicator world = Communicator::world();
  std::vector<float> data(1);
  try {
    world.broadcast(data, 99);  // no such root
    FAIL() << "no exception";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("MPI_Ibcast failed: "), std::string::npos)
        << error.what();
  }
}

TEST(Topology, ConsecutiveRanksFormOnePipeline) {
  const Topology t = make_topology(5, 8, 4, 2);
  EXPECT_EQ(t.pipeline_rank, 1);
  EXPECT_EQ(t.replica, 1);
  EXPECT_EQ(t.num_pipeline_ranks, 4);
  EXPECT_EQ(t.num_replicas, 2);
}

TEST(Topology, MismatchWithWorldSizeNamesTheConfigKeys) {
  try {
    make_topology(0, 2, 4, 1);
    FAIL() << "no exception";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "pipeline.stages (4) x pipeline.data_parallel (1) = 4 ranks, but mpirun "
                 "started 2");
  }
  EXPECT_THROW(make_topology(0, 4, 0, 4), InputError);
}

TEST(Topology, SplitWorldGivesPipelineAndDataParallelGroups) {
  const Communicator world = Communicator::world();
  const Topology topology = make_topology(world.rank(), world.size(), 2, 2);
  const Groups groups = split_world(world, topology);
  ASSERT_EQ(groups.pipeline.size(), 2);
  ASSERT_EQ(groups.data_parallel.size(), 2);
  EXPECT_EQ(groups.pipeline.rank(), topology.pipeline_rank);
  EXPECT_EQ(groups.data_parallel.rank(), topology.replica);
  // Pipeline group of replica r holds world ranks 2r, 2r+1; data-parallel group of pipeline rank s
  // holds world ranks s, s+2.
  const std::vector<double> pipeline_members =
      groups.pipeline.allgatherv(std::vector<double>{double(world.rank())});
  EXPECT_EQ(pipeline_members,
            (std::vector<double>{2.0 * topology.replica, 2.0 * topology.replica + 1}));
  const std::vector<double> data_parallel_members =
      groups.data_parallel.allgatherv(std::vector<double>{double(world.rank())});
  EXPECT_EQ(data_parallel_members,
            (std::vector<double>{double(topology.pipeline_rank), topology.pipeline_rank + 2.0}));
}

TEST(Agree, EveryRankThrowsTheLowestFailingRanksMessage) {
  const Communicator world = Communicator::world();
  try {
    agree(world, [&] {
      if (world.rank() == 3) throw Error("disk full");
      if (world.rank() == 2) throw InputError("bad shard");
    });
    FAIL() << "agree did not throw";
  } catch (const AgreedError& e) {
    EXPECT_STREQ(e.what(), "rank 2: bad shard");
    EXPECT_EQ(e.exit_code(), 2);
  }
}

TEST(Agree, PassesWhenNoRankFails) {
  const Communicator world = Communicator::world();
  int ran = 0;
  EXPECT_NO_THROW(agree(world, [&] { ++ran; }));
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(world.first_error(0, "ignored"), std::make_pair(0, std::string()));
}

}  // namespace
}  // namespace mpipe::comm
