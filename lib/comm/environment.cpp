// comm::Environment: MPI_Init_thread (FUNNELED) and MPI_Finalize as RAII.
#include "comm/communicator.h"
#include "comm/mpi_handles.h"
#include "core/error.h"

namespace mpipe::comm {

Environment::Environment(int* argc, char*** argv) {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  check(!initialized, "MPI is already initialized: create one comm::Environment per process");
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw Error(fmt::format(
        "MPI_Init_thread: MPI_THREAD_FUNNELED requested but the MPI library provides only level {}",
        provided));
  }
}

Environment::~Environment() {
  if (!mpi_finalized()) MPI_Finalize();
}

}  // namespace mpipe::comm
