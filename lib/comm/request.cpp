// comm::Request: a move-only pending MPI operation that owns its send buffer; waits under the
// watchdog's deadline.
#include <spdlog/spdlog.h>

#include <exception>

#include "comm/mpi_handles.h"
#include "comm/watchdog.h"
#include "core/error.h"

namespace mpipe::comm {

namespace {

// Checks a completed receive's size, then releases the buffer.
void complete(PendingOp& op, const MPI_Status& status) {
  op.send_buffer = {};
  op.send_owner.reset();
  if (op.expected_count < 0) return;
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_FLOAT, &count), "MPI_Get_count");
  check(count == op.expected_count, "{}: expected {} floats, got {}", describe_call(op),
        op.expected_count, count);
}

// Leaves a pending operation behind when the job is ending: a receive is cancelled (it then
// completes at once unless a message already matched it); anything still pending is left to MPI
// with its state (and send buffer) deliberately leaked, so MPI never touches freed memory of ours.
void abandon(std::unique_ptr<Request::State>& state) {
  PendingOp& op = state->op;
  if (op.expected_count >= 0) {
    MPI_Cancel(&op.request);
    int done = 0;
    MPI_Test(&op.request, &done, MPI_STATUS_IGNORE);
    if (done) return;
  }
  static_cast<void>(state.release());
}

// Completes the request without throwing (destructors and move assignment).
void finish_quietly(std::unique_ptr<Request::State>& state) {
  PendingOp& op = state->op;
  if (op.request == MPI_REQUEST_NULL || mpi_finalized()) return;
  if (std::uncaught_exceptions() > 0 || (op.watchdog && op.watchdog->fired())) {
    abandon(state);
    return;
  }
  try {
    int done = 0;
    MPI_Status status;
    MPI_Test(&op.request, &done, &status);
    if (!done && op.watchdog) wait_watched(*op.watchdog, op, status);
    if (!done && !op.watchdog) MPI_Wait(&op.request, MPI_STATUS_IGNORE);
  } catch (const WatchdogTimeout& e) {
    // A destructor cannot throw: this is the one place that ends the job itself.
    spdlog::error("{}", e.what());
    spdlog::default_logger()->flush();
    MPI_Abort(MPI_COMM_WORLD, kWatchdogExitCode);
  } catch (const std::exception&) {
    abandon(state);
  }
}

}  // namespace

Request::Request() = default;

Request::~Request() {
  if (state_) finish_quietly(state_);
}

Request::Request(Request&& other) noexcept = default;

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    if (state_) finish_quietly(state_);
    state_ = std::move(other.state_);
  }
  return *this;
}

bool Request::active() const { return state_ && state_->op.request != MPI_REQUEST_NULL; }

void Request::wait() {
  if (!active()) return;
  PendingOp& op = state_->op;
  int done = 0;
  MPI_Status status;
  // One test first: a message that has arrived costs what MPI_Wait would.
  check_mpi(MPI_Test(&op.request, &done, &status), op.call);
  if (!done && op.watchdog) wait_watched(*op.watchdog, op, status);
  if (!done && !op.watchdog) check_mpi(MPI_Wait(&op.request, &status), op.call);
  complete(op, status);
}

bool Request::test() {
  if (!active()) return true;
  PendingOp& op = state_->op;
  int done = 0;
  MPI_Status status;
  check_mpi(MPI_Test(&op.request, &done, &status), op.call);
  if (done) complete(op, status);
  return done != 0;
}

}  // namespace mpipe::comm
