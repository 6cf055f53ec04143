// Rank layout: each MPI rank's place in its pipeline (its pipeline rank) and its data-parallel
// replica, and the pipeline / data-parallel communicators split from the world.
#pragma once

#include "comm/communicator.h"

namespace mpipe::comm {

// World rank r is pipeline rank r % K of replica r / K. The K ranks of one pipeline are
// consecutive world ranks, so when mpirun packs ranks onto nodes in order (its default mapping,
// --map-by slot/core), pipeline neighbours, which exchange activations for every
// micro-batch, share a node, and only the data-parallel allreduce (once per step) crosses
// nodes.
struct Topology {
  int pipeline_rank = 0;       // position in the pipeline, 0 .. num_pipeline_ranks-1
  int replica = 0;             // which data-parallel copy of the pipeline, 0 .. num_replicas-1
  int num_pipeline_ranks = 1;  // K (pipeline.stages): the ranks of one pipeline
  int num_replicas = 1;        // D
};

// Throws InputError unless num_pipeline_ranks * num_replicas == world_size, e.g.
// "pipeline.stages (4) x pipeline.data_parallel (1) = 4 ranks, but mpirun started 2".
Topology make_topology(int world_rank, int world_size, int num_pipeline_ranks, int num_replicas);

struct Groups {
  Communicator pipeline;       // the K ranks of this rank's replica; rank = pipeline_rank
  Communicator data_parallel;  // the D replicas of this pipeline rank; rank = replica
};

// Collective over `world`: MPI_Comm_split into the pipeline group (color = replica,
// key = pipeline_rank) and the data-parallel group (color = pipeline_rank, key = replica). Tells
// the world's watchdog the layout (so its messages name each rank's pipeline rank).
Groups split_world(const Communicator& world, const Topology& topology);

}  // namespace mpipe::comm
