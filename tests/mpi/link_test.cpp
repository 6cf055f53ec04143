// Multi-rank test of Link's sends in flight (ranks 0-2 as a 3-stage pipeline, rank 3 idle): what
// a middle stage holds while its neighbours are busy, which the planner's 1F1B moments count.
#include "pipeline/link.h"

#include <gtest/gtest.h>

#include <utility>

#include "comm/communicator.h"
#include "comm/tag_space.h"
#include "core/memory_account.h"
#include "core/tensor.h"
#include "model/memory_model.h"

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
  Link link(pipeline, stage, 3, comm::TagSpace({.kinds = kDirections, .micro_batches = 8}));
  MemoryAccount& account = MemoryAccount::process();

  if (in_pipeline && stage == 1) {
    const int64_t before = account.live_bytes();
    Tensor gradient(Shape{kFloats}), activations(Shape{kFloats});
    const int64_t with_both = account.live_bytes();
    ASSERT_GE(with_both - before, 2 * kBytes);
    link.send(Direction::kGradient, 0, 0, std::move(gradient));       // backward of micro-batch 0
    link.send(Direction::kActivation, 0, 3, std::move(activations));  // forward of micro-batch 3
    link.progress();  // frees whatever completed: nothing can, no receive is posted
    EXPECT_EQ(account.live_bytes(), with_both);  // both sends still hold their tensors
    EXPECT_LE(2, model::kSendsInFlight);
    world.barrier();  // the neighbours post their receives only now
    link.wait_sends();
    EXPECT_EQ(account.live_bytes(), before);
  } else {
    world.barrier();
    if (in_pipeline) {
      const bool previous = stage == 0;
      link.post_recv(previous ? Direction::kGradient : Direction::kActivation, 0, previous ? 0 : 3,
                     Shape{kFloats});
      const Tensor got = link.wait_recv(previous ? Direction::kGradient : Direction::kActivation,
                                        previous ? 0 : 3);
      EXPECT_EQ(got.numel(), kFloats);
    }
  }
  world.barrier();
}

}  // namespace
}  // namespace mpipe::pipeline
