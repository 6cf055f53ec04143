// comm::Communicator: MPI communicators whose errors are thrown, with typed-span operations; every
// operation is nonblocking underneath and waits under the watchdog.
#include "comm/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "comm/mpi_handles.h"
#include "comm/watchdog.h"
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

// Every rank's element count of a gather on `comm` of `mine` elements (`call` names the gather in
// errors).
std::vector<int> counts_of(const Communicator& comm, std::size_t mine, const char* call) {
  const int my_count = to_mpi_count(mine, call);
  const std::vector<char> bytes =
      comm.allgather(std::span(reinterpret_cast<const char*>(&my_count), sizeof my_count));
  std::vector<int> counts(bytes.size() / sizeof my_count);
  std::memcpy(counts.data(), bytes.data(), bytes.size());
  return counts;
}

// The world rank of each rank of `comm`.
std::vector<int> world_ranks_of(MPI_Comm comm) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(comm, &group), "MPI_Comm_group");
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  int size = 0;
  check_mpi(MPI_Group_size(group, &size), "MPI_Group_size");
  std::vector<int> ranks(static_cast<size_t>(size)), translated(ranks.size());
  std::iota(ranks.begin(), ranks.end(), 0);
  check_mpi(MPI_Group_translate_ranks(group, size, ranks.data(), world, translated.data()),
            "MPI_Group_translate_ranks");
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return translated;
}

}  // namespace

std::string describe_call(const PendingOp& op) {
  const std::string group = op.group ? op.group->name : "a communicator";
  if (op.peer >= 0) {
    const bool receive = op.expected_count >= 0;
    return fmt::format("{} {} rank {} tag {}", op.call, receive ? "from" : "to",
                       op.group ? op.group->world_ranks.at(static_cast<size_t>(op.peer)) : op.peer,
                       op.tag);
  }
  return fmt::format("{} over {}", op.call, group);
}

Communicator::Communicator(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}

Communicator Communicator::world() {
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  auto handle = std::make_unique<Handle>(
      Handle{.comm = MPI_COMM_WORLD, .owned = false, .group = {}, .watchdog = nullptr});
  handle->group =
      std::make_shared<GroupInfo>(GroupInfo{"the world", world_ranks_of(MPI_COMM_WORLD)});
  return Communicator(std::move(handle));
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

int Communicator::world_rank(int rank) const {
  check(handle_ != nullptr, "Communicator::world_rank: communicator was moved from");
  return handle_->group->world_ranks.at(static_cast<size_t>(rank));
}

Communicator Communicator::split(int color, int key, std::string name) const {
  check(handle_ != nullptr, "Communicator::split: communicator was moved from");
  barrier();  // MPI_Comm_split has no nonblocking form: once every rank is here, it cannot hang
  auto handle = std::make_unique<Handle>(
      Handle{.comm = MPI_COMM_NULL, .owned = true, .group = {}, .watchdog = nullptr});
  check_mpi(MPI_Comm_split(handle_->comm, color, key, &handle->comm), "MPI_Comm_split");
  Communicator result(std::move(handle));
  check_mpi(MPI_Comm_set_errhandler(result.handle_->comm, MPI_ERRORS_RETURN),
            "MPI_Comm_set_errhandler");
  result.handle_->group =
      std::make_shared<GroupInfo>(GroupInfo{std::move(name), world_ranks_of(result.handle_->comm)});
  result.handle_->watchdog = handle_->watchdog;
  return result;
}

void Communicator::set_watchdog(Watchdog* watchdog) { handle_->watchdog = watchdog; }

Watchdog* Communicator::watchdog() const { return handle_ ? handle_->watchdog : nullptr; }

Request Communicator::start(const char* call, int peer, int tag, int root,
                            std::string label) const {
  check(handle_ != nullptr, "{}: communicator was moved from", call);
  Request request;
  request.state_ = std::make_unique<Request::State>();
  PendingOp& op = request.state_->op;
  op.call = call;
  op.peer = peer;
  op.tag = tag;
  op.root = root;
  op.label = std::move(label);
  op.watchdog = handle_->watchdog;
  op.group = handle_->group;
  return request;
}

void Communicator::barrier() const {
  Request request = start("MPI_Ibarrier", -1, -1, -1, {});
  check_mpi(MPI_Ibarrier(handle_->comm, &request.state_->op.request), "MPI_Ibarrier");
  request.wait();
}

Request Communicator::isend(std::span<const float> data, int dest, int tag,
                            std::string label) const {
  Request request = start("MPI_Isend", dest, tag, -1, std::move(label));
  PendingOp& op = request.state_->op;
  op.send_buffer.assign(data.begin(), data.end());
  check_mpi(MPI_Isend(op.send_buffer.data(), to_mpi_count(data.size(), "MPI_Isend"), MPI_FLOAT,
                      dest, tag, handle_->comm, &op.request),
            "MPI_Isend");
  return request;
}

Request Communicator::isend(std::span<const float> data, std::shared_ptr<const void> owner,
                            int dest, int tag, std::string label) const {
  check(owner != nullptr, "MPI_Isend: a send in place needs an owner of its data");
  Request request = start("MPI_Isend", dest, tag, -1, std::move(label));
  PendingOp& op = request.state_->op;
  op.send_owner = std::move(owner);
  check_mpi(MPI_Isend(data.data(), to_mpi_count(data.size(), "MPI_Isend"), MPI_FLOAT, dest, tag,
                      handle_->comm, &op.request),
            "MPI_Isend");
  return request;
}

Request Communicator::irecv(std::span<float> data, int source, int tag, std::string label) const {
  Request request = start("MPI_Irecv", source, tag, -1, std::move(label));
  PendingOp& op = request.state_->op;
  op.expected_count = to_mpi_count(data.size(), "MPI_Irecv");
  check_mpi(
      MPI_Irecv(data.data(), op.expected_count, MPI_FLOAT, source, tag, handle_->comm, &op.request),
      "MPI_Irecv");
  return request;
}

void Communicator::allreduce_sum(std::span<float> data) const { iallreduce_sum(data).wait(); }

void Communicator::allreduce_sum(std::span<double> data) const {
  Request request = start("MPI_Iallreduce", -1, -1, -1, {});
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data.data(), to_mpi_count(data.size(), "MPI_Iallreduce"),
                           MPI_DOUBLE, MPI_SUM, handle_->comm, &request.state_->op.request),
            "MPI_Iallreduce");
  request.wait();
}

Request Communicator::iallreduce_sum(std::span<float> data) const {
  Request request = start("MPI_Iallreduce", -1, -1, -1, {});
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data.data(), to_mpi_count(data.size(), "MPI_Iallreduce"),
                           MPI_FLOAT, MPI_SUM, handle_->comm, &request.state_->op.request),
            "MPI_Iallreduce");
  return request;
}

std::vector<double> Communicator::allgatherv(std::span<const double> mine) const {
  const std::vector<int> counts = counts_of(*this, mine.size(), "MPI_Iallgatherv");
  const int my_count = counts[static_cast<std::size_t>(rank())];
  const std::vector<int> offsets = displacements(counts, "MPI_Iallgatherv");
  std::vector<double> all(static_cast<std::size_t>(offsets.back() + counts.back()));
  Request request = start("MPI_Iallgatherv", -1, -1, -1, {});
  check_mpi(MPI_Iallgatherv(mine.data(), my_count, MPI_DOUBLE, all.data(), counts.data(),
                            offsets.data(), MPI_DOUBLE, handle_->comm, &request.state_->op.request),
            "MPI_Iallgatherv");
  request.wait();
  return all;
}

std::vector<float> Communicator::gatherv(std::span<const float> mine, int root) const {
  const std::vector<int> counts = counts_of(*this, mine.size(), "MPI_Igatherv");
  const std::vector<int> offsets = displacements(counts, "MPI_Igatherv");
  std::vector<float> all(rank() == root ? static_cast<std::size_t>(offsets.back() + counts.back())
                                        : 0);
  gatherv(mine, root, all, counts, offsets);
  return all;
}

void Communicator::gatherv(std::span<const float> mine, int root, std::span<float> all) const {
  const std::vector<int> counts = counts_of(*this, mine.size(), "MPI_Igatherv");
  const std::vector<int> offsets = displacements(counts, "MPI_Igatherv");
  check(rank() != root || all.size() == static_cast<std::size_t>(offsets.back() + counts.back()),
        "MPI_Igatherv: {} floats to gather into {}", offsets.back() + counts.back(), all.size());
  gatherv(mine, root, all, counts, offsets);
}

void Communicator::gatherv(std::span<const float> mine, int root, std::span<float> all,
                           const std::vector<int>& counts, const std::vector<int>& offsets) const {
  Request request = start("MPI_Igatherv", -1, -1, root, {});
  check_mpi(MPI_Igatherv(mine.data(), counts[static_cast<std::size_t>(rank())], MPI_FLOAT,
                         all.data(), counts.data(), offsets.data(), MPI_FLOAT, root, handle_->comm,
                         &request.state_->op.request),
            "MPI_Igatherv");
  request.wait();
}

void Communicator::allgatherv_in_place(std::span<float> data,
                                       std::span<const int64_t> begins) const {
  check(begins.size() == static_cast<std::size_t>(size()) + 1 && std::ranges::is_sorted(begins) &&
            begins.front() >= 0 && begins.back() <= static_cast<int64_t>(data.size()),
        "MPI_Iallgatherv: {} part begins over {} ranks and {} floats", begins.size(), size(),
        data.size());
  std::vector<int> counts, offsets;
  for (std::size_t r = 0; r + 1 < begins.size(); ++r) {
    counts.push_back(
        to_mpi_count(static_cast<std::size_t>(begins[r + 1] - begins[r]), "MPI_Iallgatherv"));
    offsets.push_back(to_mpi_count(static_cast<std::size_t>(begins[r]), "MPI_Iallgatherv"));
  }
  Request request = start("MPI_Iallgatherv", -1, -1, -1, {});
  check_mpi(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data(), counts.data(),
                            offsets.data(), MPI_FLOAT, handle_->comm, &request.state_->op.request),
            "MPI_Iallgatherv");
  request.wait();
}

void Communicator::broadcast(std::span<float> data, int root) const {
  Request request = start("MPI_Ibcast", -1, -1, root, {});
  check_mpi(MPI_Ibcast(data.data(), to_mpi_count(data.size(), "MPI_Ibcast"), MPI_FLOAT, root,
                       handle_->comm, &request.state_->op.request),
            "MPI_Ibcast");
  request.wait();
}

void Communicator::broadcast(std::span<double> data, int root) const {
  Request request = start("MPI_Ibcast", -1, -1, root, {});
  check_mpi(MPI_Ibcast(data.data(), to_mpi_count(data.size(), "MPI_Ibcast"), MPI_DOUBLE, root,
                       handle_->comm, &request.state_->op.request),
            "MPI_Ibcast");
  request.wait();
}

std::vector<char> Communicator::allgather(std::span<const char> mine) const {
  const int count = to_mpi_count(mine.size(), "MPI_Iallgather");
  std::vector<char> all(mine.size() * static_cast<size_t>(size()));
  Request request = start("MPI_Iallgather", -1, -1, -1, {});
  check_mpi(MPI_Iallgather(mine.data(), count, MPI_CHAR, all.data(), count, MPI_CHAR, handle_->comm,
                           &request.state_->op.request),
            "MPI_Iallgather");
  request.wait();
  return all;
}

void Communicator::broadcast(std::string& text, int root) const {
  double length = static_cast<double>(text.size());  // exact below 2^53
  broadcast(std::span<double>(&length, 1), root);
  text.resize(static_cast<size_t>(length));
  Request request = start("MPI_Ibcast", -1, -1, root, {});
  check_mpi(MPI_Ibcast(text.data(), to_mpi_count(text.size(), "MPI_Ibcast"), MPI_CHAR, root,
                       handle_->comm, &request.state_->op.request),
            "MPI_Ibcast");
  request.wait();
}

bool Communicator::all_true(bool mine) const {
  int value = mine ? 1 : 0;
  Request request = start("MPI_Iallreduce", -1, -1, -1, {});
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LAND, handle_->comm,
                           &request.state_->op.request),
            "MPI_Iallreduce");
  request.wait();
  return value != 0;
}

std::pair<int, std::string> Communicator::first_error(int code, const std::string& message) const {
  int first_rank = code != 0 ? rank() : size();
  Request request = start("MPI_Iallreduce", -1, -1, -1, {});
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &first_rank, 1, MPI_INT, MPI_MIN, handle_->comm,
                           &request.state_->op.request),
            "MPI_Iallreduce");
  request.wait();
  if (first_rank == size()) return {0, ""};
  double agreed_code = code;
  broadcast(std::span<double>(&agreed_code, 1), first_rank);
  std::string agreed_message = message;
  broadcast(agreed_message, first_rank);
  return {static_cast<int>(agreed_code), agreed_message};
}

void Communicator::abort(int code) const {
  MPI_Abort(handle_ ? handle_->comm : MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace mpipe::comm
