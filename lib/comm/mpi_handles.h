// Internal to lib/comm: the MPI state behind Request and Communicator, and MPI error checks.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
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

// The ranks of a communicator, for watchdog messages.
struct GroupInfo {
  std::string name;              // "the world", "the pipeline of replica 0"
  std::vector<int> world_ranks;  // world rank of each rank of the group
};

// A nonblocking MPI operation in progress (what a Request holds). Descriptions are built only
// when something goes wrong.
struct PendingOp {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<float> send_buffer;          // isend's copy of the payload, kept until completion
  std::shared_ptr<const void> send_owner;  // or what keeps a payload sent in place alive
  int expected_count = -1;                 // irecv: floats that must arrive; -1 = not checked
  const char* call = "";                   // the MPI function that started it: "MPI_Irecv"
  int peer = -1;                 // point-to-point: the peer's rank in `group`; -1 otherwise
  int tag = -1;                  // point-to-point
  int root = -1;                 // rooted collectives (broadcast, gather)
  std::string label;             // what a message carries: "the gradient of micro-batch 3"
  Watchdog* watchdog = nullptr;  // gives the wait its deadline; null = none
  std::shared_ptr<const GroupInfo> group;
};

// "MPI_Irecv from rank 1 tag 7", "MPI_Iallreduce over the world", for MPI errors.
std::string describe_call(const PendingOp& op);

struct Request::State {
  PendingOp op;
};

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;  // freed by the destructor (split communicators, not MPI_COMM_WORLD)
  std::shared_ptr<const GroupInfo> group;
  Watchdog* watchdog = nullptr;
};

// Internal to lib/comm: the watchdog's side of Request::wait, after a first MPI_Test found the
// operation pending: polls until it completes (filling `status`), or throws WatchdogTimeout.
void wait_watched(Watchdog& watchdog, PendingOp& op, MPI_Status& status);

}  // namespace mpipe::comm
