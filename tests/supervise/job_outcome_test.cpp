// Tests for reading mpirun's and srun's end: a lost host or rank is retried, a program error never.
#include "supervise/job_outcome.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace mpipe::supervise {
namespace {

// waitpid's status of a process that exited with `code`, or was killed by `signal`.
int exited(int code) { return (code & 0xff) << 8; }
int killed(int signal) { return signal; }
constexpr LauncherKind kMpirun = LauncherKind::kMpirun;
constexpr LauncherKind kSrun = LauncherKind::kSrun;

TEST(JobOutcome, ALostPeerALostDaemonAndAKilledRankAreRetried) {
  ASSERT_TRUE(WIFEXITED(exited(3)) && WEXITSTATUS(exited(3)) == 3);
  for (int code : {3, 205, 137}) {
    const JobEnd end = read_job_end(exited(code), false, kMpirun);
    EXPECT_EQ(end.outcome, JobOutcome::kLost) << code;
    EXPECT_EQ(end.exit_code, code);
  }
  EXPECT_EQ(read_job_end(exited(205), false, kMpirun).meaning,
            "mpirun lost a host's daemon: the host died or was cut off");
  EXPECT_FALSE(read_job_end(exited(205), false, kMpirun).lost_if_a_host_is_gone);
}

TEST(JobOutcome, ADaemonMpirunCouldNotStartIsALostHostOnlyIfAHostIsGone) {
  const JobEnd end = read_job_end(exited(255), false, kMpirun);
  EXPECT_EQ(end.outcome, JobOutcome::kLost);
  EXPECT_TRUE(end.lost_if_a_host_is_gone);
  EXPECT_EQ(end.exit_code, 255);
  EXPECT_EQ(end.meaning,
            "mpirun could not start a host's daemon: the host is down or cut off, or its launcher "
            "(ssh) failed");
  const JobEnd under_srun = read_job_end(exited(255), false, kSrun);
  EXPECT_EQ(under_srun.outcome, JobOutcome::kFailed);
  EXPECT_FALSE(under_srun.lost_if_a_host_is_gone);
}

TEST(JobOutcome, AProgramErrorIsNeverRetriedAndKeepsItsExitCode) {
  for (int code : {1, 2, 4, 5, 139, 254}) {
    const JobEnd end = read_job_end(exited(code), false, kMpirun);
    EXPECT_EQ(end.outcome, JobOutcome::kFailed) << code;
    EXPECT_EQ(end.exit_code, code);
  }
  EXPECT_EQ(read_job_end(exited(2), false, kMpirun).meaning,
            "bad input: a config, data or checkpoint");
  EXPECT_EQ(read_job_end(exited(4), false, kMpirun).meaning, "a rank passed pipeline.memory_limit");
  const JobEnd end = read_job_end(killed(SIGSEGV), false, kMpirun);
  EXPECT_EQ(end.outcome, JobOutcome::kFailed);
  EXPECT_EQ(end.exit_code, 128 + SIGSEGV);
}

TEST(JobOutcome, AnEndAfterAForwardedStopIsAStopWhateverTheStatus) {
  for (int status : {exited(0), exited(3), exited(205), exited(1), killed(SIGTERM)}) {
    EXPECT_EQ(read_job_end(status, true, kMpirun).outcome,
              status == 0 ? JobOutcome::kDone : JobOutcome::kStopped);
  }
  EXPECT_EQ(read_job_end(exited(0), false, kMpirun).outcome, JobOutcome::kDone);
  EXPECT_EQ(read_job_end(exited(0), false, kMpirun).exit_code, 0);
}

TEST(JobOutcome, UnderSrunALostPeerAndAKilledTaskAreRetriedButNot205WhichOnlyMpirunMeans) {
  for (int code : {3, 137}) {
    EXPECT_EQ(read_job_end(exited(code), false, kSrun).outcome, JobOutcome::kLost) << code;
  }
  EXPECT_EQ(read_job_end(exited(137), false, kSrun).meaning,
            "a task was killed by SIGKILL: Slurm ended the step on a node it set DOWN, or the OOM "
            "killer");
  const JobEnd end = read_job_end(exited(205), false, kSrun);
  EXPECT_EQ(end.outcome, JobOutcome::kFailed);
  EXPECT_EQ(end.exit_code, 205);
  for (int code : {1, 2, 4}) {
    EXPECT_EQ(read_job_end(exited(code), false, kSrun).outcome, JobOutcome::kFailed) << code;
  }
  EXPECT_EQ(read_job_end(killed(SIGKILL), false, kSrun).meaning,
            "srun itself was killed by signal 9 (Killed)");
  EXPECT_EQ(read_job_end(exited(3), true, kSrun).outcome, JobOutcome::kStopped);
}

}  // namespace
}  // namespace mpipe::supervise
