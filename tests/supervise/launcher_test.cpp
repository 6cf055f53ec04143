// Tests for the launchers' command lines: mpirun over a host list, srun on an allocation's nodes.
#include "supervise/launcher.h"

#include <gtest/gtest.h>

#include "support/input_error_of.h"

namespace mpipe::supervise {
namespace {

using Args = std::vector<std::string>;
using testing::input_error_of;

const Launcher kMpirun{.kind = LauncherKind::kMpirun, .program = "mpirun", .args = {"-x", "A"}};
const Launcher kSrun{.kind = LauncherKind::kSrun, .program = "srun", .args = {"--mpi=pmix"}};

TEST(Launcher, MpirunRunsTheRanksOnTheWholeHostListAndProbesOneSlotOfAHost) {
  const std::vector<HostSlots> hosts = {{"h1", 2}, {"h2", 2}};
  EXPECT_EQ(job_command(kMpirun, 3, hosts, {"mpipe", "train"}),
            (Args{"mpirun", "-n", "3", "--host", "h1:2,h2:2", "-x", "A", "mpipe", "train"}));
  EXPECT_EQ(probe_command(kMpirun, "h2"),
            (Args{"mpirun", "-n", "1", "--host", "h2:1", "-x", "A", "true"}));
}

TEST(Launcher, SrunRunsAStepOnTheNodesTheRanksNeedWithTheirTasksPerNodeEndedByAFailedTask) {
  const std::vector<HostSlots> hosts = {{"h1", 2}, {"h2", 2}, {"h3", 2}};
  EXPECT_EQ(job_command(kSrun, 6, hosts, {"mpipe", "train"}),
            (Args{"srun", "--nodes=3", "--ntasks=6", "--ntasks-per-node=2", "--nodelist=h1,h2,h3",
                  "--overlap", "--kill-on-bad-exit=1", "--mpi=pmix", "mpipe", "train"}));
  // 3 ranks fill h1 and one slot of h2, as mpirun would place them; h3 is left out.
  EXPECT_EQ(job_command(kSrun, 3, hosts, {"mpipe"}),
            (Args{"srun", "--nodes=2", "--ntasks=3", "--ntasks-per-node=2", "--nodelist=h1,h2",
                  "--overlap", "--kill-on-bad-exit=1", "--mpi=pmix", "mpipe"}));
  EXPECT_EQ(probe_command(kSrun, "h3"),
            (Args{"srun", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--nodelist=h3",
                  "--overlap", "--mpi=pmix", "true"}));
}

TEST(Launcher, SrunLeavesTheTasksOfNodesOfDifferentSlotsToSlurm) {
  EXPECT_EQ(job_command(kSrun, 3, {{"h1", 2}, {"h2", 1}}, {"mpipe"}),
            (Args{"srun", "--nodes=2", "--ntasks=3", "--nodelist=h1,h2", "--overlap",
                  "--kill-on-bad-exit=1", "--mpi=pmix", "mpipe"}));
}

TEST(Launcher, NoLauncherRunsMoreRanksThanSlots) {
  for (const Launcher& launcher : {kMpirun, kSrun}) {
    EXPECT_EQ(input_error_of([&] {
                job_command(launcher, 3, {{"h1", 1}, {"h2", 1}}, {"m"});
              }),
              "supervise: 3 ranks do not fit on h1:1,h2:1");
  }
}

}  // namespace
}  // namespace mpipe::supervise
