// Tests for reading a Slurm allocation's nodes and tasks: task count expansion, nodes paired.
#include "supervise/slurm_allocation.h"

#include <gtest/gtest.h>

#include "support/input_error_of.h"

namespace mpipe::supervise {
namespace {

using testing::input_error_of;

TEST(SlurmAllocation, ExpandsTaskCountsWithRepeats) {
  EXPECT_EQ(expand_tasks_per_node("2(x3),1", "T"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expand_tasks_per_node("4", "T"), (std::vector<int>{4}));
}

TEST(SlurmAllocation, PairsEachNodeWithItsTasks) {
  const auto hosts = allocation_hosts({"h2", "h3", "h5"}, "1(x2),2");
  EXPECT_EQ(host_list_text(hosts), "h2:1,h3:1,h5:2");
}

TEST(SlurmAllocation, EveryBadTaskListIsOneLineNamingTheVariable) {
  EXPECT_EQ(input_error_of([] { expand_tasks_per_node("2(x", "T"); }),
            "T: '2(x': not a task count N or N(xTIMES)");
  EXPECT_EQ(input_error_of([] { expand_tasks_per_node("0", "T"); }),
            "T: '0': not a task count N or N(xTIMES)");
  EXPECT_EQ(input_error_of([] {
              allocation_hosts({"h1", "h2", "h3"}, "1(x2)");
            }),
            "SLURM_JOB_NODELIST names 3 nodes but SLURM_TASKS_PER_NODE counts tasks for 2");
}

}  // namespace
}  // namespace mpipe::supervise
