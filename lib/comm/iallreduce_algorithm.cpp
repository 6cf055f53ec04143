// The MPI_Iallreduce algorithm: Open MPI's libnbc control variable, read and set through MPI_T.
#include "comm/iallreduce_algorithm.h"

#include <mpi.h>

#include <array>
#include <optional>
#include <string_view>

namespace mpipe::comm {
namespace {

constexpr char kVariable[] = "coll_libnbc_iallreduce_algorithm";
// The variable's values, in Open MPI 4.1's order (ompi_info --param coll libnbc --level 5).
constexpr std::array<std::string_view, 5> kAlgorithms{"ignore", "ring", "binomial", "rabenseifner",
                                                      "recursive_doubling"};
constexpr int kIgnore = 0;
constexpr int kRabenseifner = 3;

// MPI_T's session for one read or write of the variable: its handle, or none where this MPI has
// no such variable (or no MPI_T).
class ControlVariable {
 public:
  ControlVariable() {
    // At MPI's own thread level: Open MPI 4.1 takes MPI_T's level for MPI_Query_thread's.
    int level = MPI_THREAD_SINGLE, provided = 0;
    if (MPI_Query_thread(&level) != MPI_SUCCESS) return;
    if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS) return;
    initialized_ = true;
    int index = 0, count = 0;
    if (MPI_T_cvar_get_index(kVariable, &index) != MPI_SUCCESS) return;
    if (MPI_T_cvar_handle_alloc(index, nullptr, &handle_, &count) != MPI_SUCCESS) return;
    allocated_ = count == 1;
  }
  ~ControlVariable() {
    if (handle_ != MPI_T_CVAR_HANDLE_NULL) MPI_T_cvar_handle_free(&handle_);
    if (initialized_) MPI_T_finalize();
  }
  ControlVariable(const ControlVariable&) = delete;
  ControlVariable& operator=(const ControlVariable&) = delete;

  std::optional<int> read() const {
    int value = 0;
    if (!allocated_ || MPI_T_cvar_read(handle_, &value) != MPI_SUCCESS) return std::nullopt;
    return value;
  }
  void write(int value) {
    if (allocated_) MPI_T_cvar_write(handle_, &value);
  }

 private:
  bool initialized_ = false;
  bool allocated_ = false;
  MPI_T_cvar_handle handle_ = MPI_T_CVAR_HANDLE_NULL;
};

}  // namespace

void prefer_reduce_scatter_allgather() {
  ControlVariable variable;
  // Every rank reads the same value (mpirun passes the user's MCA settings to all), so every rank
  // makes the same choice and their collectives match.
  if (variable.read() == kIgnore) variable.write(kRabenseifner);
}

std::string iallreduce_algorithm() {
  const std::optional<int> value = ControlVariable().read();
  if (!value || *value < 0 || *value >= static_cast<int>(kAlgorithms.size())) return "unknown";
  return std::string(kAlgorithms[static_cast<size_t>(*value)]);
}

}  // namespace mpipe::comm
