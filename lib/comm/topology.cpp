// Rank layout: world rank -> (stage, replica) and the communicator split that follows from it.
#include "comm/topology.h"

#include <fmt/format.h>

#include "comm/watchdog.h"
#include "core/error.h"

namespace mpipe::comm {

Topology make_topology(int world_rank, int world_size, int num_stages, int num_replicas) {
  check_input(num_stages >= 1, "pipeline.stages must be >= 1, got {}", num_stages);
  check_input(num_replicas >= 1, "pipeline.data_parallel must be >= 1, got {}", num_replicas);
  check_input(
      num_stages * num_replicas == world_size,
      "pipeline.stages ({}) x pipeline.data_parallel ({}) = {} ranks, but mpirun started {}",
      num_stages, num_replicas, num_stages * num_replicas, world_size);
  check(world_rank >= 0 && world_rank < world_size, "make_topology: rank {} outside [0, {})",
        world_rank, world_size);
  return Topology{.stage = world_rank % num_stages,
                  .replica = world_rank / num_stages,
                  .num_stages = num_stages,
                  .num_replicas = num_replicas};
}

Groups split_world(const Communicator& world, const Topology& topology) {
  const Topology expected =
      make_topology(world.rank(), world.size(), topology.num_stages, topology.num_replicas);
  check(expected.stage == topology.stage && expected.replica == topology.replica,
        "split_world: topology (stage {}, replica {}) is not the one of world rank {}",
        topology.stage, topology.replica, world.rank());
  if (Watchdog* watchdog = world.watchdog()) watchdog->set_topology(topology);
  Groups groups{
      .pipeline = world.split(topology.replica, topology.stage,
                              fmt::format("the pipeline of replica {}", topology.replica)),
      .data_parallel =
          world.split(topology.stage, topology.replica,
                      fmt::format("the data-parallel group of stage {}", topology.stage))};
  check(groups.pipeline.size() == topology.num_stages &&
            groups.data_parallel.size() == topology.num_replicas,
        "split_world: got groups of {} and {} ranks, expected {} and {}", groups.pipeline.size(),
        groups.data_parallel.size(), topology.num_stages, topology.num_replicas);
  return groups;
}

}  // namespace mpipe::comm
