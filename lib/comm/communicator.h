// MPI wrappers: the only code in mpipe that includes <mpi.h>. RAII environment,
// communicators whose errors become exceptions, move-only requests, typed spans, and waits
// that a Watchdog gives a deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
namespace mpipe::comm {

class Watchdog;

// MPI_Init_thread / MPI_Finalize. Requests MPI_THREAD_MULTIPLE, which the opt-in progress
// thread (comm::ProgressThread) needs: the experiment that asks for it is read after MPI is up.
// Accepts MPI_THREAD_FUNNELED (then the progress thread is refused with an error naming the
// config key); less is an error. Every other MPI call is made by the main thread (oneDNN's OpenMP
// threads never call MPI), except those of the thread in which a checkpoint's peer copies travel
// (train::BackgroundCopy, MPI_THREAD_MULTIPLE only), on a communicator of its own.
class Environment {
 public:
  Environment(int* argc, char*** argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

// The thread support MPI provides (MPI_Query_thread), in MPI's order.
enum class ThreadLevel { kSingle, kFunneled, kSerialized, kMultiple };
inline constexpr EnumNames<ThreadLevel, 4> kThreadLevelNames{
    {{"MPI_THREAD_SINGLE", ThreadLevel::kSingle},
     {"MPI_THREAD_FUNNELED", ThreadLevel::kFunneled},
     {"MPI_THREAD_SERIALIZED", ThreadLevel::kSerialized},
     {"MPI_THREAD_MULTIPLE", ThreadLevel::kMultiple}}};
ThreadLevel thread_level();
// "MPI_THREAD_FUNNELED", ...
std::string to_string(ThreadLevel level);

// A pending nonblocking operation. Move-only; it owns the buffer it was given (a send
// buffer is kept alive until completion). The destructor waits if still pending, except while an
// exception unwinds the stack or after the watchdog fired: then it abandons the operation (a
// receive is cancelled; a send or collective is left to MPI, its buffer kept), because the job is
// ending and the peer may never answer.
class Request {
 public:
  Request();
  ~Request();
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  bool active() const;
  // Completes the operation. With a watchdog on the communicator that made it, the wait has a
  // deadline (Watchdog): one MPI_Test, then polling with a short back-off; past the deadline it
  // throws WatchdogTimeout. Without one it waits as long as it takes.
  void wait();
  bool test();  // true when complete

  struct State;  // internal to lib/comm

 private:
  friend class Communicator;
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
  // The world rank of this communicator's rank `rank`.
  int world_rank(int rank) const;
  // MPI_Comm_split: ranks with the same color form a communicator, ordered by key. `name` says
  // which group it is in watchdog messages ("the pipeline of replica 0"). The new communicator
  // shares this one's watchdog. (A watched barrier first, so a lost peer cannot hang the split.)
  Communicator split(int color, int key, std::string name = "a group") const;

  // Every wait of this communicator and of those split from it gets the watchdog's deadline
  // (null: none). The watchdog must outlive them.
  void set_watchdog(Watchdog* watchdog);
  Watchdog* watchdog() const;

  // All operations below wait under the watchdog (collectives use their nonblocking forms).
  void barrier() const;
  // Point-to-point, float payloads. The send copies `data` into a buffer the request owns.
  // `label` says what the message carries in watchdog messages ("the gradient of micro-batch 3").
  Request isend(std::span<const float> data, int dest, int tag, std::string label = {}) const;
  // The same without the copy: MPI reads `data` in place, and the request keeps `owner` (which
  // must keep `data` alive and unchanged) until the send completes.
  Request isend(std::span<const float> data, std::shared_ptr<const void> owner, int dest, int tag,
                std::string label = {}) const;
  Request irecv(std::span<float> data, int source, int tag, std::string label = {}) const;
  // In-place sum over all ranks; nonblocking form keeps `data` alive until wait().
  void allreduce_sum(std::span<float> data) const;
  void allreduce_sum(std::span<double> data) const;
  Request iallreduce_sum(std::span<float> data) const;
  // Every rank contributes `mine`; returns all contributions concatenated in rank order
  // (sizes may differ per rank).
  std::vector<double> allgatherv(std::span<const double> mine) const;
  // The same, gathered on `root` alone: the root gets every contribution concatenated in rank
  // order, every other rank an empty vector.
  std::vector<float> gatherv(std::span<const float> mine, int root) const;
  // The same into `all` on `root` (exactly the contributions' total size there; ignored
  // elsewhere), so the caller owns the buffer.
  void gatherv(std::span<const float> mine, int root, std::span<float> all) const;
  // Every rank's part of `data`, [begins[rank], begins[rank + 1]), to every rank, in place
  // (MPI_Iallgatherv). `begins`: size() + 1 ascending offsets, the last at most data.size().
  void allgatherv_in_place(std::span<float> data, std::span<const int64_t> begins) const;
  void broadcast(std::span<float> data, int root) const;
  void broadcast(std::span<double> data, int root) const;
  // The root's `text` (any bytes) replaces every other rank's.
  void broadcast(std::string& text, int root) const;
  // Logical AND / max over ranks (for agreeing on errors and end conditions).
  bool all_true(bool mine) const;
  // Collective: the (code, message) of the lowest rank whose code is non-zero, the same on every
  // rank; {0, ""} when every rank passed 0. For agreeing on errors after start-up.
  std::pair<int, std::string> first_error(int code, const std::string& message) const;
  // Every rank contributes `mine` (the same size on every rank); returns all, in rank order.
  std::vector<char> allgather(std::span<const char> mine) const;
  // MPI_Abort on this communicator.
  [[noreturn]] void abort(int code) const;

 private:
  friend class Watchdog;
  struct Handle;
  explicit Communicator(std::unique_ptr<Handle> handle);
  Request start(const char* call, int peer, int tag, int root, std::string label) const;
  // gatherv with every rank's count and offset known.
  void gatherv(std::span<const float> mine, int root, std::span<float> all,
               const std::vector<int>& counts, const std::vector<int>& offsets) const;
  std::unique_ptr<Handle> handle_;
};

}  // namespace mpipe::comm
