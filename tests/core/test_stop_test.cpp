// Tests for the test hook's value, MPIPE_TEST_STOP_AT: each moment read back, and each malformed
// value refused with its one line.
#include "core/test_stop.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace mpipe {
namespace {

TEST(TestStop, ReadsRankMomentAndStep) {
  const TestStop stop = parse_test_stop("4:allreduce:12");
  EXPECT_EQ(stop.world_rank, 4);
  EXPECT_EQ(stop.moment, TestMoment::kAllreduce);
  EXPECT_EQ(stop.step, 12);
}

TEST(TestStop, WithoutAStepStopsTheFirstTime) {
  const TestStop stop = parse_test_stop("1:start-up");
  EXPECT_EQ(stop.world_rank, 1);
  EXPECT_EQ(stop.moment, TestMoment::kStartUp);
  EXPECT_FALSE(stop.step.has_value());
}

TEST(TestStop, EveryMomentReadsBack) {
  for (const auto& [name, moment] : kTestMomentNames) {
    EXPECT_EQ(parse_test_stop("0:" + std::string(name) + ":3").moment, moment) << name;
    EXPECT_EQ(name_of(kTestMomentNames, moment), name);
  }
}

std::string refusal(const std::string& value) {
  try {
    parse_test_stop(value);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(TestStop, MalformedValuesAreRefusedInOneLine) {
  const std::string expected =
      "MPIPE_TEST_STOP_AT: expected <world rank>:<moment>[:<step>] with a moment among start-up, "
      "forward, backward, allreduce, peer_copy, checkpoint, evaluation, got ";
  EXPECT_EQ(refusal("1"), expected + "'1' (no moment)");
  EXPECT_EQ(refusal("x:forward:3"), expected + "'x:forward:3' (the rank is not an integer >= 0)");
  EXPECT_EQ(refusal("-1:forward"), expected + "'-1:forward' (the rank is not an integer >= 0)");
  EXPECT_EQ(refusal("1:sideways:3"), expected + "'1:sideways:3' (no moment 'sideways')");
  EXPECT_EQ(refusal("1:forward:"), expected + "'1:forward:' (the step is not an integer >= 0)");
  EXPECT_EQ(refusal("1:forward:3:4"),
            expected + "'1:forward:3:4' (the step is not an integer >= 0)");
}

}  // namespace
}  // namespace mpipe
