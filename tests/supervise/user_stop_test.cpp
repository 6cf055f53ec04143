// Tests for a user's stop signals to the supervisor: what goes to the job, and when.
#include "supervise/user_stop.h"

#include <gtest/gtest.h>

#include <csignal>

namespace mpipe::supervise {
namespace {

TEST(UserStop, NoSignalSendsNothing) {
  UserStop stop;
  EXPECT_FALSE(stop.requested());
  EXPECT_EQ(stop.to_pass_on(true), 0);
  EXPECT_FALSE(stop.passed_on());
}

TEST(UserStop, TheFirstGoesAsSigusr1OnceTheJobIsUnderWay) {
  UserStop stop;
  stop.received();
  EXPECT_TRUE(stop.requested());
  // Before the job has logged: held (a rank still in MPI_Init would die of it), not lost.
  EXPECT_EQ(stop.to_pass_on(false), 0);
  EXPECT_EQ(stop.to_pass_on(false), 0);
  EXPECT_TRUE(stop.held());
  EXPECT_FALSE(stop.passed_on());
  EXPECT_EQ(stop.to_pass_on(true), SIGUSR1);
  EXPECT_TRUE(stop.passed_on());
  EXPECT_FALSE(stop.held());
  EXPECT_EQ(stop.to_pass_on(true), 0);  // once
}

TEST(UserStop, EachLaterOneGoesAsSigtermAtOnce) {
  UserStop stop;
  stop.received();
  EXPECT_EQ(stop.to_pass_on(true), SIGUSR1);
  stop.received();
  EXPECT_EQ(stop.to_pass_on(true), SIGTERM);
  EXPECT_EQ(stop.to_pass_on(true), 0);
  stop.received();  // (a second SIGTERM within 5 s makes mpirun exit at once)
  EXPECT_EQ(stop.to_pass_on(true), SIGTERM);
}

TEST(UserStop, ASecondOneWhileTheFirstIsHeldEndsTheJobAtOnce) {
  UserStop stop;
  stop.received();
  EXPECT_EQ(stop.to_pass_on(false), 0);
  stop.received();
  EXPECT_EQ(stop.to_pass_on(false), SIGTERM);
  EXPECT_TRUE(stop.passed_on());
  EXPECT_EQ(stop.to_pass_on(true), 0);  // the held SIGUSR1 is not sent after it
}

}  // namespace
}  // namespace mpipe::supervise
