// comm::Request: a move-only pending MPI operation that owns its send buffer.
#include "comm/mpi_handles.h"
#include "core/error.h"

namespace mpipe::comm {

namespace {

// Completes the request without throwing (for destructors and move assignment).
void finish_quietly(PendingOp& op) {
  if (op.request != MPI_REQUEST_NULL && !mpi_finalized()) MPI_Wait(&op.request, MPI_STATUS_IGNORE);
}

// Checks a completed receive's size, then releases the buffer.
void complete(PendingOp& state, const MPI_Status& status) {
  state.send_buffer = {};
  if (state.expected_count < 0) return;
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_FLOAT, &count), "MPI_Get_count");
  check(count == state.expected_count, "{}: expected {} floats, got {}", state.description,
        state.expected_count, count);
}

}  // namespace

Request::Request() = default;

Request::~Request() {
  if (state_) finish_quietly(state_->op);
}

Request::Request(Request&& other) noexcept = default;

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    if (state_) finish_quietly(state_->op);
    state_ = std::move(other.state_);
  }
  return *this;
}

bool Request::active() const { return state_ && state_->op.request != MPI_REQUEST_NULL; }

void Request::wait() {
  if (!active()) return;
  PendingOp& op = state_->op;
  MPI_Status status;
  check_mpi(MPI_Wait(&op.request, &status), ("MPI_Wait on " + op.description).c_str());
  complete(op, status);
}

bool Request::test() {
  if (!active()) return true;
  PendingOp& op = state_->op;
  int done = 0;
  MPI_Status status;
  check_mpi(MPI_Test(&op.request, &done, &status), ("MPI_Test on " + op.description).c_str());
  if (done) complete(op, status);
  return done != 0;
}

}  // namespace mpipe::comm
