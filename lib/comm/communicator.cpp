// comm::Communicator: MPI communicators whose errors are thrown, with typed-span operations.
#include "comm/communicator.h"

#include <cstdlib>

#include "comm/mpi_handles.h"
#include "core/error.h"

namespace mpipe::comm {

namespace {

// Start offsets of each rank's block when blocks of `counts` are concatenated.
std::vector<int> displacements(const std::vector<int>& counts, const char* call) {
  std::vector<int> offsets(counts.size(), 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = to_mpi_count(total, call);
    total += static_cast<std::size_t>(counts[r]);
  }
  to_mpi_count(total, call);
  return offsets;
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}

Communicator Communicator::world() {
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return Communicator(std::make_unique<Handle>(Handle{MPI_COMM_WORLD, false}));
}

Communicator::~Communicator() {
  if (handle_ && handle_->owned && !mpi_finalized()) MPI_Comm_free(&handle_->comm);
}

Communicator::Communicator(Communicator&&) noexcept = default;

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    if (handle_ && handle_->owned && !mpi_finalized()) MPI_Comm_free(&handle_->comm);
    handle_ = std::move(other.handle_);
  }
  return *this;
}

int Communicator::rank() const {
  check(handle_ != nullptr, "Communicator::rank: communicator was moved from");
  int rank = 0;
  check_mpi(MPI_Comm_rank(handle_->comm, &rank), "MPI_Comm_rank");
  return rank;
}

int Communicator::size() const {
  check(handle_ != nullptr, "Communicator::size: communicator was moved from");
  int size = 0;
  check_mpi(MPI_Comm_size(handle_->comm, &size), "MPI_Comm_size");
  return size;
}

Communicator Communicator::split(int color, int key) const {
  check(handle_ != nullptr, "Communicator::split: communicator was moved from");
  auto handle = std::make_unique<Handle>(Handle{MPI_COMM_NULL, true});
  check_mpi(MPI_Comm_split(handle_->comm, color, key, &handle->comm), "MPI_Comm_split");
  Communicator result(std::move(handle));
  check_mpi(MPI_Comm_set_errhandler(result.handle_->comm, MPI_ERRORS_RETURN),
            "MPI_Comm_set_errhandler");
  return result;
}

void Communicator::barrier() const { check_mpi(MPI_Barrier(handle_->comm), "MPI_Barrier"); }

Request Communicator::isend(std::span<const float> data, int dest, int tag) const {
  Request request;
  request.state_ = std::make_unique<Request::State>();
  PendingOp& op = request.state_->op;
  op.send_buffer.assign(data.begin(), data.end());
  op.description = fmt::format("MPI_Isend to rank {} tag {}", dest, tag);
  check_mpi(MPI_Isend(op.send_buffer.data(), to_mpi_count(data.size(), "MPI_Isend"), MPI_FLOAT,
                      dest, tag, handle_->comm, &op.request),
            op.description.c_str());
  return request;
}

Request Communicator::irecv(std::span<float> data, int source, int tag) const {
  Request request;
  request.state_ = std::make_unique<Request::State>();
  PendingOp& op = request.state_->op;
  op.expected_count = to_mpi_count(data.size(), "MPI_Irecv");
  op.description = fmt::format("MPI_Irecv from rank {} tag {}", source, tag);
  check_mpi(
      MPI_Irecv(data.data(), op.expected_count, MPI_FLOAT, source, tag, handle_->comm, &op.request),
      op.description.c_str());
  return request;
}

void Communicator::allreduce_sum(std::span<float> data) const {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data(), to_mpi_count(data.size(), "MPI_Allreduce"),
                          MPI_FLOAT, MPI_SUM, handle_->comm),
            "MPI_Allreduce");
}

void Communicator::allreduce_sum(std::span<double> data) const {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data(), to_mpi_count(data.size(), "MPI_Allreduce"),
                          MPI_DOUBLE, MPI_SUM, handle_->comm),
            "MPI_Allreduce");
}

Request Communicator::iallreduce_sum(std::span<float> data) const {
  Request request;
  request.state_ = std::make_unique<Request::State>();
  PendingOp& op = request.state_->op;
  op.description = "MPI_Iallreduce";
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data.data(), to_mpi_count(data.size(), "MPI_Iallreduce"),
                           MPI_FLOAT, MPI_SUM, handle_->comm, &op.request),
            "MPI_Iallreduce");
  return request;
}

std::vector<double> Communicator::allgatherv(std::span<const double> mine) const {
  int my_count = to_mpi_count(mine.size(), "MPI_Allgatherv");
  std::vector<int> counts(static_cast<std::size_t>(size()));
  check_mpi(MPI_Allgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, handle_->comm),
            "MPI_Allgather");
  const std::vector<int> offsets = displacements(counts, "MPI_Allgatherv");
  std::vector<double> all(static_cast<std::size_t>(offsets.back() + counts.back()));
  check_mpi(MPI_Allgatherv(mine.data(), my_count, MPI_DOUBLE, all.data(), counts.data(),
                           offsets.data(), MPI_DOUBLE, handle_->comm),
            "MPI_Allgatherv");
  return all;
}

std::vector<float> Communicator::gatherv(std::span<const float> mine, int root) const {
  int my_count = to_mpi_count(mine.size(), "MPI_Gatherv");
  const bool is_root = rank() == root;
  std::vector<int> counts(is_root ? static_cast<std::size_t>(size()) : 0);
  check_mpi(MPI_Gather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, root, handle_->comm),
            "MPI_Gather");
  std::vector<int> offsets;
  std::vector<float> all;
  if (is_root) {
    offsets = displacements(counts, "MPI_Gatherv");
    all.resize(static_cast<std::size_t>(offsets.back() + counts.back()));
  }
  check_mpi(MPI_Gatherv(mine.data(), my_count, MPI_FLOAT, all.data(), counts.data(), offsets.data(),
                        MPI_FLOAT, root, handle_->comm),
            "MPI_Gatherv");
  return all;
}

void Communicator::broadcast(std::span<float> data, int root) const {
  check_mpi(MPI_Bcast(data.data(), to_mpi_count(data.size(), "MPI_Bcast"), MPI_FLOAT, root,
                      handle_->comm),
            "MPI_Bcast");
}

void Communicator::broadcast(std::span<double> data, int root) const {
  check_mpi(MPI_Bcast(data.data(), to_mpi_count(data.size(), "MPI_Bcast"), MPI_DOUBLE, root,
                      handle_->comm),
            "MPI_Bcast");
}

void Communicator::broadcast(std::string& text, int root) const {
  int64_t size = static_cast<int64_t>(text.size());
  check_mpi(MPI_Bcast(&size, 1, MPI_INT64_T, root, handle_->comm), "MPI_Bcast");
  text.resize(static_cast<size_t>(size));
  check_mpi(
      MPI_Bcast(text.data(), to_mpi_count(text.size(), "MPI_Bcast"), MPI_CHAR, root, handle_->comm),
      "MPI_Bcast");
}

bool Communicator::all_true(bool mine) const {
  int value = mine ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LAND, handle_->comm),
            "MPI_Allreduce");
  return value != 0;
}

std::pair<int, std::string> Communicator::first_error(int code, const std::string& message) const {
  int first_rank = code != 0 ? rank() : size();
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first_rank, 1, MPI_INT, MPI_MIN, handle_->comm),
            "MPI_Allreduce");
  if (first_rank == size()) return {0, ""};
  int header[2] = {code, static_cast<int>(message.size())};
  check_mpi(MPI_Bcast(header, 2, MPI_INT, first_rank, handle_->comm), "MPI_Bcast");
  std::string text =
      rank() == first_rank ? message : std::string(static_cast<size_t>(header[1]), ' ');
  check_mpi(MPI_Bcast(text.data(), header[1], MPI_CHAR, first_rank, handle_->comm), "MPI_Bcast");
  return {header[0], text};
}

void Communicator::abort(int code) const {
  MPI_Abort(handle_ ? handle_->comm : MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace mpipe::comm
