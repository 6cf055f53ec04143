// One of the MPI library's control variables (MPI_T), read and written by name: how mpipe sets
// and checks Open MPI's settings after MPI_Init.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

namespace mpipe::comm {

// An MPI_T session open on one integer control variable (MPI_INT, MPI_UNSIGNED,
// MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_LONG or MPI_LONG_LONG), for as long as the object
// lives. Where this MPI has no such variable (or no MPI_T), reads give none and writes do nothing.
class ControlVariable {
 public:
  explicit ControlVariable(const std::string& name);
  ~ControlVariable();
  ControlVariable(const ControlVariable&) = delete;
  ControlVariable& operator=(const ControlVariable&) = delete;

  std::optional<long long> read() const;
  void write(long long value);

 private:
  bool initialized_ = false;
  MPI_T_cvar_handle handle_ = MPI_T_CVAR_HANDLE_NULL;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace mpipe::comm
