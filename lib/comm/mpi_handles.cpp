// Internal to lib/comm: MPI error checks shared by the environment, requests and communicators.
#include "comm/mpi_handles.h"

#include <climits>

#include "core/error.h"

namespace mpipe::comm {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw Error(fmt::format("{} failed: {} (MPI error {})", call,
                          length > 0 ? std::string(text, length) : "unknown error", code));
}

int to_mpi_count(std::size_t count, const char* call) {
  check(count <= static_cast<std::size_t>(INT_MAX), "{}: {} elements exceed MPI's int count", call,
        count);
  return static_cast<int>(count);
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

}  // namespace mpipe::comm
