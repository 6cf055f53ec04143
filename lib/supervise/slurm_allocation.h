// The nodes of a Slurm allocation and their tasks, from what Slurm tells a batch script
// (SLURM_JOB_NODELIST as scontrol expands it, SLURM_TASKS_PER_NODE): the host list of a job
// supervised with srun.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "supervise/host_list.h"

namespace mpipe::supervise {

// Expands SLURM_TASKS_PER_NODE: "2(x3),1" -> 2 2 2 1. Throws InputError naming `what` for a
// count that is not a positive integer.
std::vector<int> expand_tasks_per_node(std::string_view tasks, std::string_view what);

// The allocation's nodes (SLURM_JOB_NODELIST expanded, as `scontrol show hostnames` does) with
// their tasks as slots, in Slurm's order. Throws InputError when the two lists differ in length.
std::vector<HostSlots> allocation_hosts(const std::vector<std::string>& names,
                                        std::string_view tasks_per_node);

}  // namespace mpipe::supervise
