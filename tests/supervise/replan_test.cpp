// Tests for re-planning on the surviving slots: global micro-batches kept, bit-identity first,
// then the most ranks; one line when nothing fits.
#include "supervise/replan.h"

#include <gtest/gtest.h>

#include "support/input_error_of.h"

namespace mpipe::supervise {
namespace {

using testing::input_error_of;

std::optional<std::string> any_fits(const Layout&) { return std::nullopt; }

TEST(Replan, KeepsDAndTakesTheMostStagesTheSlotsHold) {
  const Layout old{.stages = 3, .replicas = 1, .micro_batches = 4};
  const Replan plan = replan(old, 2, false, any_fits);
  EXPECT_EQ(plan.layout, (Layout{.stages = 2, .replicas = 1, .micro_batches = 4}));
  EXPECT_TRUE(plan.bit_identical);
}

TEST(Replan, KeepsTheGlobalMicroBatchesWhenDChanges) {
  // K=2 x D=2 with 2 micro-batches each (4 in all) on 3 slots: D=2 keeps the bits only with K=1
  // (2 ranks); without tree sums that beats D=1 x K=3 (3 ranks, not bit-identical).
  const Layout old{.stages = 2, .replicas = 2, .micro_batches = 2};
  Replan plan = replan(old, 3, false, any_fits);
  EXPECT_EQ(plan.layout, (Layout{.stages = 1, .replicas = 2, .micro_batches = 2}));
  EXPECT_TRUE(plan.bit_identical);
  // Under tree sums D=1 (a power of two) keeps the bits too, and uses the 3 slots.
  plan = replan(old, 3, true, any_fits);
  EXPECT_EQ(plan.layout, (Layout{.stages = 3, .replicas = 1, .micro_batches = 4}));
  EXPECT_TRUE(plan.bit_identical);
}

TEST(Replan, SaysWhenNoLayoutKeepsTheBits) {
  // D=3 (3 micro-batches in all) on 2 slots: D must divide 3, so only D=1 is left.
  const Layout old{.stages = 1, .replicas = 3, .micro_batches = 1};
  const Replan plan = replan(old, 2, true, any_fits);
  EXPECT_EQ(plan.layout, (Layout{.stages = 2, .replicas = 1, .micro_batches = 3}));
  EXPECT_FALSE(plan.bit_identical);
}

TEST(Replan, SkipsLayoutsThePlannerRefuses) {
  const Layout old{.stages = 4, .replicas = 1, .micro_batches = 2};
  std::vector<Layout> asked;
  const Replan plan = replan(old, 3, false, [&](const Layout& layout) {
    asked.push_back(layout);
    return layout.stages > 2 ? std::optional<std::string>("more stages than layers") : std::nullopt;
  });
  EXPECT_EQ(plan.layout, (Layout{.stages = 2, .replicas = 1, .micro_batches = 2}));
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].stages, 3);
}

TEST(Replan, NamesTheBestLayoutAndWhatItMissesWhenNoneFits) {
  const Layout old{.stages = 3, .replicas = 1, .micro_batches = 4};
  const auto none = [](const Layout& layout) {
    return std::optional<std::string>(
        fmt::format("pipeline.memory_limit: rank 0 needs {} MiB", 3 - layout.stages));
  };
  EXPECT_EQ(input_error_of([&] { replan(old, 2, false, none); }),
            "2 slots left: no layout fits: 2 stages x 1 replica, 4 micro-batches each: "
            "pipeline.memory_limit: rank 0 needs 1 MiB");
  EXPECT_EQ(input_error_of([&] { replan(old, 0, false, none); }), "no slot left to run on");
}

TEST(Replan, UsesEverySlotWhenAsked) {
  // K=2 x D=2 on 3 slots: bit-identical D=2 needs K=1 (2 ranks); the daemon's every rank takes
  // part, so only 3-rank layouts are candidates: K=3 x D=1 (D must divide 4).
  const Layout old{.stages = 2, .replicas = 2, .micro_batches = 2};
  const Replan plan = replan(old, 3, false, any_fits, SlotUse::kEvery);
  EXPECT_EQ(plan.layout, (Layout{.stages = 3, .replicas = 1, .micro_batches = 4}));
  EXPECT_FALSE(plan.bit_identical);
  const auto none = [](const Layout&) { return std::optional<std::string>("too big"); };
  EXPECT_EQ(input_error_of([&] { replan(old, 3, false, none, SlotUse::kEvery); }),
            "3 slots left: no layout fits: 3 stages x 1 replica, 4 micro-batches each: too big");
}

TEST(Replan, BitIdentityFollowsTheRuleOfD) {
  const Layout d2{.stages = 1, .replicas = 2, .micro_batches = 2};
  const Layout d4{.stages = 1, .replicas = 4, .micro_batches = 1};
  const Layout d3{.stages = 1, .replicas = 3, .micro_batches = 1};
  const Layout d2k3{.stages = 3, .replicas = 2, .micro_batches = 2};
  EXPECT_TRUE(keeps_bit_identity(d2, d2k3, false));
  EXPECT_FALSE(keeps_bit_identity(d4, d2, false));
  EXPECT_TRUE(keeps_bit_identity(d4, d2, true));
  EXPECT_FALSE(keeps_bit_identity(d3, d2, true));
}

}  // namespace
}  // namespace mpipe::supervise
