// Rank layout: world rank -> (pipeline rank, replica) and the communicator split that follows from
// it.
#include "comm/topology.h"

#include <fmt/format.h>

#include "comm/watchdog.h"
#include "core/error.h"

namespace mpipe::comm {

Topology make_topology(int world_rank, int world_size, int num_pipeline_ranks, int num_replicas) {
  check_input(num_pipeline_ranks >= 1, "pipeline.stages must be >= 1, got {}", num_pipeline_ranks);
  check_input(num_replicas >= 1, "pipeline.data_parallel must be >= 1, got {}", num_replicas);
  check_input(
      num_pipeline_ranks * num_replicas == world_size,
      "pipeline.stages ({}) x pipeline.data_parallel ({}) = {} ranks, but mpirun started {}",
      num_pipeline_ranks, num_replicas, num_pipeline_ranks * num_replicas, world_size);
  check(world_rank >= 0 && world_rank < world_size, "make_topology: rank {} outside [0, {})",
        world_rank, world_size);
  return Topology{.pipeline_rank = world_rank % num_pipeline_ranks,
                  .replica = world_rank / num_pipeline_ranks,
                  .num_pipeline_ranks = num_pipeline_ranks,
                  .num_replicas = num_replicas};
}

Groups split_world(const Communicator& world, const Topology& topology) {
  const Topology expected =
      make_topology(world.rank(), world.size(), topology.num_pipeline_ranks, topology.num_replicas);
  check(expected.pipeline_rank == topology.pipeline_rank && expected.replica == topology.replica,
        "split_world: topology (pipeline rank {}, replica {}) is not the one of world rank {}",
        topology.pipeline_rank, topology.replica, world.rank());
  if (Watchdog* watchdog = world.watchdog()) watchdog->set_topology(topology);
  Groups groups{
      .pipeline = world.split(topology.replica, topology.pipeline_rank,
                              fmt::format("the pipeline of replica {}", topology.replica)),
      .data_parallel = world.split(
          topology.pipeline_rank, topology.replica,
          fmt::format("the data-parallel group of pipeline rank {}", topology.pipeline_rank))};
  check(groups.pipeline.size() == topology.num_pipeline_ranks &&
            groups.data_parallel.size() == topology.num_replicas,
        "split_world: got groups of {} and {} ranks, expected {} and {}", groups.pipeline.size(),
        groups.data_parallel.size(), topology.num_pipeline_ranks, topology.num_replicas);
  return groups;
}

}  // namespace mpipe::comm
