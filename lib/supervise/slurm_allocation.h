// The nodes of a Slurm allocation and their tasks, read from what Slurm tells a batch script
// (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE): the host list of a job supervised with srun.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "supervise/host_list.h"

namespace mpipe::supervise {

// Expands a Slurm host list: "h[2-3],node[08-10,12],gpu1" -> h2 h3 node08 node09 node10 node12
// gpu1 (a range keeps its first number's zero padding; several brackets in one name multiply).
// Throws InputError naming `what` for an unclosed bracket, a bad range or an empty list.
std::vector<std::string> expand_host_list(std::string_view nodelist, std::string_view what);

// Expands SLURM_TASKS_PER_NODE: "2(x3),1" -> 2 2 2 1. Throws InputError naming `what` for a
// count that is not a positive integer.
std::vector<int> expand_tasks_per_node(std::string_view tasks, std::string_view what);

// The allocation's nodes with their tasks as slots, in Slurm's order. Throws InputError when
// the two lists differ in length.
std::vector<HostSlots> allocation_hosts(std::string_view nodelist, std::string_view tasks_per_node);

}  // namespace mpipe::supervise
