// comm::Environment: MPI_Init_thread (MULTIPLE, FUNNELED accepted; the TCP eager limit and the
// allreduce algorithm chosen, SIGPIPE ignored) and MPI_Finalize as RAII; the thread level MPI
// provides.
#include "comm/broken_pipe.h"
#include "comm/communicator.h"
#include "comm/iallreduce_algorithm.h"
#include "comm/mpi_handles.h"
#include "comm/tcp_eager_limit.h"
#include "core/error.h"

namespace mpipe::comm {

Environment::Environment(int* argc, char*** argv) {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  check(!initialized, "MPI is already initialized: create one comm::Environment per process");
  prefer_eager_tcp_messages();
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw Error(fmt::format(
        "MPI_Init_thread: MPI_THREAD_FUNNELED at least is needed but the MPI library provides "
        "only level {}",
        provided));
  }
  prefer_reduce_scatter_allgather();
  // A process alone has no peer to lose: it keeps SIGPIPE's default, so that `mpipe translate ...
  // | head` ends when head does, as a command-line tool should.
  int world_size = 1;
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world_size), "MPI_Comm_size");
  if (world_size > 1) ignore_broken_pipes();
}

Environment::~Environment() {
  if (!mpi_finalized()) MPI_Finalize();
}

ThreadLevel thread_level() {
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
  if (provided >= MPI_THREAD_MULTIPLE) return ThreadLevel::kMultiple;
  if (provided >= MPI_THREAD_SERIALIZED) return ThreadLevel::kSerialized;
  if (provided >= MPI_THREAD_FUNNELED) return ThreadLevel::kFunneled;
  return ThreadLevel::kSingle;
}

std::string to_string(ThreadLevel level) { return std::string(name_of(kThreadLevelNames, level)); }

}  // namespace mpipe::comm
