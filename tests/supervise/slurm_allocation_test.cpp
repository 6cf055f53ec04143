// Tests for reading a Slurm allocation's nodes and tasks: host list and task count expansion.
#include "supervise/slurm_allocation.h"

#include <gtest/gtest.h>

#include "support/input_error_of.h"

namespace mpipe::supervise {
namespace {

using Names = std::vector<std::string>;
using testing::input_error_of;

TEST(SlurmAllocation, ExpandsRangesListsAndPaddingOfAHostList) {
  EXPECT_EQ(expand_host_list("h[2-3]", "L"), (Names{"h2", "h3"}));
  EXPECT_EQ(expand_host_list("node[08-10,12],gpu1", "L"),
            (Names{"node08", "node09", "node10", "node12", "gpu1"}));
  EXPECT_EQ(expand_host_list("r[1-2]n[1,3]", "L"), (Names{"r1n1", "r1n3", "r2n1", "r2n3"}));
  EXPECT_EQ(expand_host_list("solo", "L"), (Names{"solo"}));
}

TEST(SlurmAllocation, ExpandsTaskCountsWithRepeats) {
  EXPECT_EQ(expand_tasks_per_node("2(x3),1", "T"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expand_tasks_per_node("4", "T"), (std::vector<int>{4}));
}

TEST(SlurmAllocation, PairsEachNodeWithItsTasks) {
  const auto hosts = allocation_hosts("h[2-3],h5", "1(x2),2");
  EXPECT_EQ(host_list_text(hosts), "h2:1,h3:1,h5:2");
}

TEST(SlurmAllocation, EveryBadListIsOneLineNamingTheVariable) {
  EXPECT_EQ(input_error_of([] { expand_host_list("h[2-3", "L"); }),
            "L: 'h[2-3': a '[' without its ']'");
  EXPECT_EQ(input_error_of([] { expand_host_list("h[3-2]", "L"); }),
            "L: 'h[3-2]': '3-2' is not a number or a range low-high");
  EXPECT_EQ(input_error_of([] { expand_host_list("", "L"); }), "L: no node given");
  EXPECT_EQ(input_error_of([] { expand_host_list("a,,b", "L"); }), "L: '': not a host name");
  EXPECT_EQ(input_error_of([] { expand_tasks_per_node("2(x", "T"); }),
            "T: '2(x': not a task count N or N(xTIMES)");
  EXPECT_EQ(input_error_of([] { expand_tasks_per_node("0", "T"); }),
            "T: '0': not a task count N or N(xTIMES)");
  EXPECT_EQ(input_error_of([] { allocation_hosts("h[1-3]", "1(x2)"); }),
            "SLURM_JOB_NODELIST names 3 nodes but SLURM_TASKS_PER_NODE counts tasks for 2");
}

}  // namespace
}  // namespace mpipe::supervise
