// The rank a launcher (mpirun, srun) gave this process, and its job's size, read from the
// environment without MPI.
#pragma once

namespace mpipe::app {

// The first of OMPI_COMM_WORLD_RANK (Open MPI's mpirun), PMIX_RANK, PMI_RANK (MPICH's hydra) and
// SLURM_PROCID (srun) that holds a rank; 0 when none does (no launcher: one process). Lets the
// commands that run without MPI, and a command line that does not parse, answer from one rank.
int launcher_rank();

// The first of OMPI_COMM_WORLD_SIZE, PMIX_SIZE, PMI_SIZE and SLURM_NTASKS that holds a count; 1
// when none does. Lets translate run across ranks only when a launcher started several.
int launcher_size();

}  // namespace mpipe::app
