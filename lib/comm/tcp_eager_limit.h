// Open MPI's TCP transport (between hosts) sends messages of up to 1 MiB eagerly, in one go,
// where its default (64 KiB) makes every larger message wait for a handshake with its receiver.
#pragma once

namespace mpipe::comm {

// The eager limit, rendezvous eager limit and largest send of Open MPI's TCP transport that
// mpipe sets: one bucket of the data-parallel allreduce (comm::BucketedAllreduce, at most 1 MiB)
// and a typical stage boundary's message.
inline constexpr long long kTcpEagerBytes = 1 << 20;

// Called once before MPI_Init: sets OMPI_MCA_btl_tcp_eager_limit, OMPI_MCA_btl_tcp_rndv_eager_limit
// and OMPI_MCA_btl_tcp_max_send_size to kTcpEagerBytes in this process's environment, each
// unless it is set already (mpirun passes `--mca NAME VALUE` to its ranks this way, so a user's
// choice is kept).
//
// Why: a message above the eager limit moves in steps (a request to send, the receiver's
// answer, then the data), and over TCP each step needs both ranks inside an MPI call. Between
// two layers' backwards, where the executor makes those calls, a 1 MiB bucket of a 2-rank
// reduce-scatter + allgather took several layers to cross; sent eagerly, one call sends it. On
// two hosts at 1 Gbit/s (scripts/bench/slow_links.sh, D=2, batch 1024) the wait for the
// allreduce after the backward went from about 185 to 75-90 ms a step, of a 270 ms transfer.
// Open MPI's TCP fragments grow to 1 MiB, yet a scaling_mlp rank's peak RSS did not grow (D=2:
// 137 against 142 MiB; K=2: 91 and 93 against 92 and 93). Messages over shared memory, and the
// bits of every result, do not change.
void prefer_eager_tcp_messages();

}  // namespace mpipe::comm
