// Internal to lib/comm: the MPI state behind Request and Communicator, and MPI error checks.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::comm {

// Throws mpipe::Error("<call> failed: <MPI_Error_string>") unless `code` is MPI_SUCCESS.
void check_mpi(int code, const char* call);

// Converts an element count to MPI's int, throwing if it does not fit.
int to_mpi_count(std::size_t count, const char* call);

// True once MPI_Finalize has run (destructors must not call MPI after that).
bool mpi_finalized();

// A nonblocking MPI operation in progress (what a Request holds).
struct PendingOp {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<float> send_buffer;  // isend's copy of the payload, kept until completion
  int expected_count = -1;         // irecv: floats that must arrive; -1 = not checked
  std::string description;         // "MPI_Irecv from rank 1 tag 7", for error messages
};

struct Request::State {
  PendingOp op;
};

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;  // freed by the destructor (split communicators, not MPI_COMM_WORLD)
};

}  // namespace mpipe::comm
