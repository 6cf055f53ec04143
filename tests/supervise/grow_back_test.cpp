// Tests for growing a supervised job back: the spares, which hosts a launch takes, when the
// supervisor looks for hosts that answer again, when it widens and when not, and what the job's
// end after its own stop means.
#include "supervise/grow_back.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "support/input_error_of.h"

namespace mpipe::supervise {
namespace {

using testing::input_error_of;

const std::vector<HostSlots> kHosts = {
    {.host = "h1", .slots = 1}, {.host = "h2", .slots = 1}, {.host = "h3", .slots = 1}};
const std::vector<HostSlots> kSurvivors = {{.host = "h1", .slots = 1}, {.host = "h3", .slots = 1}};
const std::vector<HostSlots> kH2 = {{.host = "h2", .slots = 1}};
const Layout kNarrow{.stages = 2, .replicas = 1, .micro_batches = 4};

std::optional<std::string> any_fits(const Layout&) { return std::nullopt; }

std::vector<std::string> names(const std::vector<HostSlots>& hosts) {
  std::vector<std::string> names;
  for (const HostSlots& host : hosts) names.push_back(host.host + ":" + std::to_string(host.slots));
  return names;
}

TEST(GrowBack, SparesAreParsedAsHostsAndNotNamedTwice) {
  EXPECT_EQ(names(parse_spares("s1:2,s2", kHosts)), (std::vector<std::string>{"s1:2", "s2:1"}));
  EXPECT_EQ(input_error_of([] { parse_spares("s1,h2:1", kHosts); }),
            "--spare: h2 is in --hosts too");
  EXPECT_EQ(input_error_of([] { parse_spares("s1:0", kHosts); }),
            "--spare: 's1:0': the slots after ':' must be an integer from 1 to 4096");
  EXPECT_EQ(input_error_of([] { parse_spares("", kHosts); }),
            "--spare: no host given (e.g. h1:2,h2:2)");
}

TEST(GrowBack, ALaunchTakesThePoolsHostsThatAnswerInOrderWithinTheWidth) {
  const std::vector<HostSlots> pool = host_pool(kHosts, {{.host = "s1", .slots = 1}});
  EXPECT_EQ(names(missing_hosts(pool, kSurvivors)), (std::vector<std::string>{"h2:1", "s1:1"}));
  // h2 lost: the spare keeps the width (3 slots).
  const std::vector<HostSlots> answering = {
      {.host = "s1", .slots = 1}, {.host = "h3", .slots = 1}, {.host = "h1", .slots = 1}};
  EXPECT_EQ(names(chosen_hosts(pool, answering, 3)),
            (std::vector<std::string>{"h1:1", "h3:1", "s1:1"}));
  // Every host answers: never past the width the job started with.
  std::vector<HostSlots> all = pool;
  EXPECT_EQ(names(chosen_hosts(pool, all, 3)), (std::vector<std::string>{"h1:1", "h2:1", "h3:1"}));
}

TEST(GrowBack, LooksForHostsOnlyWhileNarrowerThanAtTheStartGrowingOnAndNoStopAsked) {
  EXPECT_TRUE(looks_for_hosts(kSurvivors, 3, 60, false));
  EXPECT_FALSE(looks_for_hosts(kSurvivors, 3, 0, false));  // --regrow-interval 0: growing off
  EXPECT_FALSE(looks_for_hosts(kSurvivors, 3, 60, true));  // a user's stop
  EXPECT_FALSE(looks_for_hosts(kHosts, 3, 60, false));     // as wide as at the start
}

TEST(GrowBack, AHostThatFailsItsProbeAgainWidensNothing) {
  EXPECT_EQ(wider_hosts(kHosts, kSurvivors, {}, 3), std::nullopt);
  const auto wider = wider_hosts(kHosts, kSurvivors, kH2, 3);
  ASSERT_TRUE(wider);
  EXPECT_EQ(names(*wider), (std::vector<std::string>{"h1:1", "h2:1", "h3:1"}));
  EXPECT_EQ(answer_again_text(kH2), "h2 answers again");
  EXPECT_EQ(answer_again_text(kHosts), "h1, h2, h3 answer again");
}

TEST(GrowBack, WidensToTheMostStagesKeepingTheGlobalMicroBatches) {
  const auto wider = plan_wider(kNarrow, 3, false, any_fits);
  ASSERT_TRUE(std::holds_alternative<Replan>(wider));
  EXPECT_EQ(std::get<Replan>(wider).layout,
            (Layout{.stages = 3, .replicas = 1, .micro_batches = 4}));
  EXPECT_TRUE(std::get<Replan>(wider).bit_identical);
}

TEST(GrowBack, StaysNarrowWhenTheWiderLayoutDoesNotFit) {
  const auto refuse_three = [](const Layout& layout) {
    return layout.ranks() > 2 ? std::optional<std::string>("more stages than layers")
                              : std::nullopt;
  };
  EXPECT_EQ(std::get<std::string>(plan_wider(kNarrow, 3, false, refuse_three)),
            "no layout of more than 2 ranks on 3 slots that the planner accepts keeps the bits");
  // The daemon (every slot a rank): nothing fits 3 ranks.
  EXPECT_EQ(std::get<std::string>(plan_wider(kNarrow, 3, false, refuse_three, SlotUse::kEvery)),
            "3 slots left: no layout fits: 3 stages x 1 replica, 4 micro-batches each: more "
            "stages than layers");
}

TEST(GrowBack, StaysNarrowRatherThanLoseBitIdentity) {
  // 1 x 2 replicas (4 micro-batches in all) onto 3 slots, every slot a rank: D=1 x K=3 changes D
  // without tree sums; D=3 does not divide 4.
  const Layout replicas{.stages = 1, .replicas = 2, .micro_batches = 2};
  EXPECT_EQ(std::get<std::string>(plan_wider(replicas, 3, false, any_fits, SlotUse::kEvery)),
            "3 stages x 1 replica, 4 micro-batches each would not be bit-identical (a change of D "
            "keeps the bits only under weight_grads: tree, between powers of two)");
  // A train job may leave a slot idle: 2 stages x 2 replicas does not fit 3 slots, 1 x 2 is no
  // wider.
  EXPECT_EQ(std::get<std::string>(plan_wider(replicas, 3, false, any_fits)),
            "no layout of more than 2 ranks on 3 slots that the planner accepts keeps the bits");
  // Under tree sums D=1 keeps the bits.
  EXPECT_TRUE(std::holds_alternative<Replan>(plan_wider(replicas, 3, true, any_fits)));
}

TEST(GrowBack, TheSupervisorsStopWidensOnlyAJobThatStoppedByItAlone) {
  JobEnd done{.outcome = JobOutcome::kDone, .exit_code = 0, .meaning = "done"};
  EXPECT_EQ(read_grow_stop(done, false, false), GrowStopEnd::kWiden);
  EXPECT_EQ(read_grow_stop(done, false, true), GrowStopEnd::kFinished);  // finished meanwhile
  EXPECT_EQ(read_grow_stop(done, true, false), GrowStopEnd::kOther);     // a user's stop too
  const JobEnd lost{.outcome = JobOutcome::kLost, .exit_code = 205, .meaning = "lost"};
  EXPECT_EQ(read_grow_stop(lost, false, false), GrowStopEnd::kOther);  // a host lost meanwhile
  const JobEnd failed{.outcome = JobOutcome::kFailed, .exit_code = 2, .meaning = "bad input"};
  EXPECT_EQ(read_grow_stop(failed, false, false), GrowStopEnd::kOther);
}

}  // namespace
}  // namespace mpipe::supervise
