// comm::ProgressThread: MPI_Iprobe on a private communicator in a loop, to drive Open MPI's
// progress engine from a thread of its own.
#include "comm/progress_thread.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <system_error>
#include <utility>

#include "comm/mpi_handles.h"
#include "core/error.h"

namespace mpipe::comm {

struct ProgressThread::Private {
  MPI_Comm comm = MPI_COMM_NULL;
};

ProgressThread::ProgressThread(std::chrono::microseconds pause)
    : pause_(pause), private_(std::make_unique<Private>()) {
  check(thread_level() == ThreadLevel::kMultiple,
        "the MPI progress thread needs MPI_THREAD_MULTIPLE, but this MPI library provides only {}",
        to_string(thread_level()));
  // A duplicate of MPI_COMM_SELF (local, not collective): no message of mpipe's ever matches a
  // probe on it, and its errors come back as codes.
  check_mpi(MPI_Comm_dup(MPI_COMM_SELF, &private_->comm), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(private_->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  try {
    thread_ = std::thread([this] { loop(); });
  } catch (const std::system_error& e) {
    MPI_Comm_free(&private_->comm);
    throw Error(fmt::format("the MPI progress thread could not start: {}", e.what()));
  }
}

ProgressThread::~ProgressThread() {
  try {
    stop();
  } catch (const Error&) {
    // The thread had ended at an MPI error: joined all the same; a destructor cannot report it.
  }
}

void ProgressThread::stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
  if (private_->comm != MPI_COMM_NULL && !mpi_finalized()) MPI_Comm_free(&private_->comm);
  private_->comm = MPI_COMM_NULL;
  if (!error_.empty()) throw Error(std::exchange(error_, {}));
}

void ProgressThread::loop() {
  // Sleeps as long as asked (the default timer slack would add up to 50 us to each pause), and
  // shows in top -H and gdb under its own name.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  pthread_setname_np(pthread_self(), "mpipe-progress");
  while (!stop_.load(std::memory_order_relaxed)) {
    int flag = 0;
    const int code =
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, private_->comm, &flag, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) {
      try {
        check_mpi(code, "MPI_Iprobe (progress thread)");
      } catch (const Error& e) {
        error_ = e.what();
      }
      return;
    }
    polls_.fetch_add(1, std::memory_order_relaxed);
    if (pause_.count() > 0) std::this_thread::sleep_for(pause_);
  }
}

}  // namespace mpipe::comm
