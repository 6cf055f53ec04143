// Rank layout: which pipeline stage and data-parallel replica each MPI rank runs, and the
// pipeline / data-parallel communicators split from the world.
#pragma once

#include "comm/communicator.h"

namespace mpipe::comm {

// World rank r runs stage r % K of replica r / K. The K stages of one pipeline are
// consecutive ranks, so when mpirun packs ranks onto nodes in order (its default mapping,
// --map-by slot/core), pipeline neighbours, which exchange activations for every
// micro-batch, share a node, and only the data-parallel allreduce (once per step) crosses
// nodes.
struct Topology {
  int stage = 0;         // position in the pipeline, 0 .. num_stages-1
  int replica = 0;       // which data-parallel copy of the pipeline, 0 .. num_replicas-1
  int num_stages = 1;    // K
  int num_replicas = 1;  // D
};

// Throws InputError unless num_stages * num_replicas == world_size, e.g.
// "pipeline.stages (4) x pipeline.data_parallel (1) = 4 ranks, but mpirun started 2".
Topology make_topology(int world_rank, int world_size, int num_stages, int num_replicas);

struct Groups {
  Communicator pipeline;       // the K stages of this rank's replica; rank = stage
  Communicator data_parallel;  // the D replicas of this rank's stage; rank = replica
};

// Collective over `world`: MPI_Comm_split into the pipeline group (color = replica,
// key = stage) and the data-parallel group (color = stage, key = replica). Tells the world's
// watchdog the layout (so its messages name each rank's stage).
Groups split_world(const Communicator& world, const Topology& topology);

}  // namespace mpipe::comm
