// MPI wrappers: the only code in mpipe that includes <mpi.h>. RAII environment,
// communicators whose errors become exceptions, move-only requests, typed spans.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace mpipe::comm {

// MPI_Init_thread / MPI_Finalize. Requests MPI_THREAD_FUNNELED: only the main thread calls
// MPI (oneDNN's OpenMP threads never do).
class Environment {
 public:
  Environment(int* argc, char*** argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

// A pending nonblocking operation. Move-only; it owns the buffer it was given (a send
// buffer is kept alive until completion). The destructor waits if still pending.
class Request {
 public:
  Request();
  ~Request();
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  bool active() const;
  void wait();
  bool test();  // true when complete

 private:
  friend class Communicator;
  struct State;
  std::unique_ptr<State> state_;
};

class Communicator {
 public:
  // MPI_COMM_WORLD with MPI_ERRORS_RETURN (errors are thrown as mpipe::Error).
  static Communicator world();
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  int rank() const;
  int size() const;
  // MPI_Comm_split: ranks with the same color form a communicator, ordered by key.
  Communicator split(int color, int key) const;

  void barrier() const;
  // Point-to-point, float payloads. The send copies `data` into a buffer the request owns.
  Request isend(std::span<const float> data, int dest, int tag) const;
  Request irecv(std::span<float> data, int source, int tag) const;
  // In-place sum over all ranks; nonblocking form keeps `data` alive until wait().
  void allreduce_sum(std::span<float> data) const;
  void allreduce_sum(std::span<double> data) const;
  Request iallreduce_sum(std::span<float> data) const;
  // Every rank contributes `mine`; returns all contributions concatenated in rank order
  // (sizes may differ per rank).
  std::vector<double> allgatherv(std::span<const double> mine) const;
  std::vector<float> gatherv(std::span<const float> mine, int root) const;
  void broadcast(std::span<float> data, int root) const;
  void broadcast(std::span<double> data, int root) const;
  // The root's `text` (any bytes) replaces every other rank's.
  void broadcast(std::string& text, int root) const;
  // Logical AND / max over ranks (for agreeing on errors and end conditions).
  bool all_true(bool mine) const;
  // Collective: the (code, message) of the lowest rank whose code is non-zero, the same on every
  // rank; {0, ""} when every rank passed 0. For agreeing on errors after start-up.
  std::pair<int, std::string> first_error(int code, const std::string& message) const;
  // MPI_Abort on this communicator.
  [[noreturn]] void abort(int code) const;

 private:
  struct Handle;
  explicit Communicator(std::unique_ptr<Handle> handle);
  std::unique_ptr<Handle> handle_;
};

}  // namespace mpipe::comm
