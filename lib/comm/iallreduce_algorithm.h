// The algorithm behind MPI_Iallreduce: a bandwidth-optimal reduce-scatter + allgather
// (Rabenseifner's) in place of Open MPI 4.1's default for in-place sums, a binomial reduce then
// broadcast that moves the whole buffer over one link after the other.
#pragma once

#include <string>

namespace mpipe::comm {

// Called once after MPI_Init on every rank: sets Open MPI's libnbc control variable
// coll_libnbc_iallreduce_algorithm (through MPI_T) to "rabenseifner" unless the user chose an
// algorithm (`--mca coll_libnbc_iallreduce_algorithm N`, or its OMPI_MCA_ environment variable),
// which is kept. With 2 ranks each sends the other half its buffer, then gets half back: both
// links carry the buffer at once, half the binomial's time on a slow link. Every sum of 2 ranks
// is still one IEEE addition (a + b = b + a), so the bits do not change; the pairwise levels of
// `weight_grads: tree` stay exact. An MPI without the variable is left as it is.
void prefer_reduce_scatter_allgather();

// The algorithm MPI_Iallreduce runs now: "rabenseifner", "ring", "binomial",
// "recursive_doubling", "ignore" (Open MPI picks), or "unknown" without the variable.
std::string iallreduce_algorithm();

}  // namespace mpipe::comm
