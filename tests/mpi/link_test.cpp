// Multi-rank tests of Link: its sends in flight (ranks 0-2 as a 3-stage pipeline, rank 3 idle),
// what a middle stage holds while its neighbours are busy, which the planner's 1F1B moments count;
// a send held until released; and messages between two ranks that hold two chunks each (virtual
// stages).
#include "pipeline/link.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/tag_space.h"
#include "core/error.h"
#include "core/memory_account.h"
#include "core/tensor.h"
#include "plan/memory_model.h"

namespace mpipe::pipeline {
namespace {

// Large enough that Open MPI moves it by rendezvous: a send completes only once its receiver
// has matched it.
constexpr int64_t kFloats = 256 * 1024;
constexpr int64_t kBytes = kFloats * static_cast<int64_t>(sizeof(float));

// A middle stage of 1F1B sends its gradient of micro-batch i - 1 backward and then the
// activations of micro-batch j forward before it runs the backward of i. While the previous stage
// is still in its forward and the next one has not yet taken the activations, both sends hold
// their tensors during that backward: the planner's 1F1B moments count kSendsInFlight sends.
TEST(Link, KeepsTwoSendsWhileNeitherNeighbourReceives) {
  const comm::Communicator world = comm::Communicator::world();
  ASSERT_GE(world.size(), 3);
  const bool in_pipeline = world.rank() < 3;
  const comm::Communicator pipeline =
      world.split(in_pipeline ? 0 : 1, world.rank(), "a 3-stage pipeline");
  const int stage = pipeline.rank();
  Link link(pipeline, stage, plan::Placement{.num_ranks = 3},
            comm::TagSpace({.kinds = kDirections, .micro_batches = 8}));
  MemoryAccount& account = MemoryAccount::process();

  if (in_pipeline && stage == 1) {
    const int64_t before = account.live_bytes();
    Tensor gradient(Shape{kFloats}), activations(Shape{kFloats});
    const int64_t with_both = account.live_bytes();
    ASSERT_GE(with_both - before, 2 * kBytes);
    link.send(Direction::kGradient, 0, 0, 0, std::move(gradient));  // backward of micro-batch 0
    link.send(Direction::kActivation, 0, 3, 0, std::move(activations));  // forward of micro-batch 3
    link.progress();  // frees whatever completed: nothing can, no receive is posted
    EXPECT_EQ(account.live_bytes(), with_both);  // both sends still hold their tensors
    EXPECT_LE(2, plan::kSendsInFlight);
    world.barrier();  // the neighbours post their receives only now
    link.wait_sends();
    EXPECT_EQ(account.live_bytes(), before);
  } else {
    world.barrier();
    if (in_pipeline) {
      const bool previous = stage == 0;
      link.post_recv(previous ? Direction::kGradient : Direction::kActivation, 0, previous ? 0 : 3,
                     0, Shape{kFloats});
      const Tensor got = link.wait_recv(previous ? Direction::kGradient : Direction::kActivation,
                                        previous ? 0 : 3, 0);
      EXPECT_EQ(got.numel(), kFloats);
    }
  }
  world.barrier();
}

// A send's tensor stays held after its receiver has taken it, until the link releases it
// (Executor::train_step does at the ops send_releases gives), so what a stage holds at an op does
// not depend on when its neighbour's MPI progressed: the memory walk counts exactly those.
TEST(Link, HoldsASendReceivedUntilItIsReleased) {
  const comm::Communicator world = comm::Communicator::world();
  const bool in_pipeline = world.rank() < 2;
  const comm::Communicator pipeline =
      world.split(in_pipeline ? 0 : 1, world.rank(), "a 2-stage pipeline");
  Link link(pipeline, pipeline.rank(), plan::Placement{.num_ranks = 2},
            comm::TagSpace({.kinds = kDirections, .micro_batches = 8}));
  MemoryAccount& account = MemoryAccount::process();
  if (in_pipeline && pipeline.rank() == 0) {
    const int64_t before = account.live_bytes();
    Tensor large(Shape{kFloats});
    const int64_t with_large = account.live_bytes();
    Tensor small(Shape{16});  // sent eagerly: complete at once
    const int64_t small_bytes = account.live_bytes() - with_large;
    link.send(Direction::kActivation, 0, 0, 0, std::move(large));
    link.send(Direction::kActivation, 0, 1, 0, std::move(small));
    world.barrier();  // stage 1 has received both
    link.progress();
    EXPECT_EQ(account.live_bytes(), with_large + small_bytes);  // both held
    link.release_sends(1);                                      // the oldest only
    EXPECT_EQ(account.live_bytes(), before + small_bytes);
    link.release_sends(1);  // already released: nothing more
    EXPECT_EQ(account.live_bytes(), before + small_bytes);
    link.wait_sends();
    EXPECT_EQ(account.live_bytes(), before);
  } else {
    if (in_pipeline) {
      link.post_recv(Direction::kActivation, 0, 0, 0, Shape{kFloats});
      link.post_recv(Direction::kActivation, 0, 1, 0, Shape{16});
      EXPECT_EQ(link.wait_recv(Direction::kActivation, 0, 0).numel(), kFloats);
      EXPECT_EQ(link.wait_recv(Direction::kActivation, 1, 0).numel(), 16);
    }
    world.barrier();
  }
  world.barrier();
}

// A tensor of `floats` values, each `value`.
Tensor filled(int64_t floats, float value) {
  Tensor tensor(Shape{floats});
  for (float& x : tensor.span()) x = value;
  return tensor;
}

// K = 2 ranks with v = 2 chunks each: stages 0, 2 on rank 0 and 1, 3 on rank 1, so both chunks'
// messages of the same micro-batch go between the same two ranks, in both directions. Each must
// reach the chunk it is for (the tag carries the receiving chunk), whichever order they are sent
// and received in, and the stage ends (stage 0's input gradient, stage 3's output) have no peer.
TEST(Link, DeliversEachChunksMessagesToThatChunk) {
  const comm::Communicator world = comm::Communicator::world();
  ASSERT_GE(world.size(), 2);
  const bool in_pipeline = world.rank() < 2;
  const comm::Communicator pipeline =
      world.split(in_pipeline ? 0 : 1, world.rank(), "a 2-rank pipeline of 2 chunks each");
  if (in_pipeline) {
    const int rank = pipeline.rank();
    const plan::Placement placement{.num_ranks = 2, .virtual_stages = 2};
    Link link(pipeline, rank, placement,
              comm::TagSpace({.kinds = kDirections, .micro_batches = 2, .chunks = 2}));
    // Large enough for rendezvous on one of the two messages, small for the other: their
    // arrival order differs from the order the receiver waits in.
    const std::vector<int64_t> sizes = {kFloats, 16};
    if (rank == 0) {
      // Stage 0 → 1 (rank 1's chunk 0) and stage 2 → 3 (rank 1's chunk 1), chunk 1's first.
      link.send(Direction::kActivation, 0, 1, 1, filled(sizes[1], 2.0f));
      link.send(Direction::kActivation, 0, 1, 0, filled(sizes[0], 1.0f));
      // Stage 1's activations reach stage 2 (chunk 1 here); stage 3's gradient too.
      link.post_recv(Direction::kGradient, 0, 1, 1, Shape{sizes[1]});
      link.post_recv(Direction::kActivation, 0, 1, 1, Shape{sizes[0]});
      EXPECT_EQ(link.wait_recv(Direction::kActivation, 1, 1).span()[0], 3.0f);
      EXPECT_EQ(link.wait_recv(Direction::kGradient, 1, 1).span()[0], 4.0f);
      EXPECT_THROW(link.send(Direction::kGradient, 0, 1, 0, filled(1, 0.0f)), Error);
    } else {
      link.post_recv(Direction::kActivation, 0, 1, 0, Shape{sizes[0]});
      link.post_recv(Direction::kActivation, 0, 1, 1, Shape{sizes[1]});
      EXPECT_EQ(link.wait_recv(Direction::kActivation, 1, 1).span()[0], 2.0f);
      EXPECT_EQ(link.wait_recv(Direction::kActivation, 1, 0).span()[0], 1.0f);
      link.send(Direction::kActivation, 0, 1, 0, filled(sizes[0], 3.0f));  // stage 1 → 2
      link.send(Direction::kGradient, 0, 1, 1, filled(sizes[1], 4.0f));    // stage 3 → 2
      EXPECT_THROW(link.send(Direction::kActivation, 0, 1, 1, filled(1, 0.0f)), Error);
    }
    link.wait_sends();
  }
  world.barrier();
}

}  // namespace
}  // namespace mpipe::pipeline
