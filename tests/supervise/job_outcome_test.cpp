// Tests for reading mpirun's end: a lost host or rank is retried, a program error never.
#include "supervise/job_outcome.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace mpipe::supervise {
namespace {

// waitpid's status of a process that exited with `code`, or was killed by `signal`.
int exited(int code) { return (code & 0xff) << 8; }
int killed(int signal) { return signal; }

TEST(JobOutcome, ALostPeerALostDaemonAndAKilledRankAreRetried) {
  ASSERT_TRUE(WIFEXITED(exited(3)) && WEXITSTATUS(exited(3)) == 3);
  for (int code : {3, 205, 137}) {
    const JobEnd end = read_job_end(exited(code), false);
    EXPECT_EQ(end.outcome, JobOutcome::kLost) << code;
    EXPECT_EQ(end.exit_code, code);
  }
  EXPECT_EQ(read_job_end(exited(205), false).meaning,
            "mpirun lost a host's daemon: the host died or was cut off");
}

TEST(JobOutcome, AProgramErrorIsNeverRetriedAndKeepsItsExitCode) {
  for (int code : {1, 2, 4, 5, 139, 255}) {
    const JobEnd end = read_job_end(exited(code), false);
    EXPECT_EQ(end.outcome, JobOutcome::kFailed) << code;
    EXPECT_EQ(end.exit_code, code);
  }
  EXPECT_EQ(read_job_end(exited(2), false).meaning, "bad input: a config, data or checkpoint");
  EXPECT_EQ(read_job_end(exited(4), false).meaning, "a rank passed pipeline.memory_limit");
  const JobEnd end = read_job_end(killed(SIGSEGV), false);
  EXPECT_EQ(end.outcome, JobOutcome::kFailed);
  EXPECT_EQ(end.exit_code, 128 + SIGSEGV);
}

TEST(JobOutcome, AnEndAfterAForwardedStopIsAStopWhateverTheStatus) {
  for (int status : {exited(0), exited(3), exited(205), exited(1), killed(SIGTERM)}) {
    EXPECT_EQ(read_job_end(status, true).outcome,
              status == 0 ? JobOutcome::kDone : JobOutcome::kStopped);
  }
  EXPECT_EQ(read_job_end(exited(0), false).outcome, JobOutcome::kDone);
  EXPECT_EQ(read_job_end(exited(0), false).exit_code, 0);
}

}  // namespace
}  // namespace mpipe::supervise
