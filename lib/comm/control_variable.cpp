// One MPI_T control variable, read and written by name.
#include "comm/control_variable.h"

namespace mpipe::comm {
namespace {

// Reads or writes `value` through a buffer of the variable's own type.
template <typename T>
std::optional<long long> read_as(MPI_T_cvar_handle handle) {
  T value{};
  if (MPI_T_cvar_read(handle, &value) != MPI_SUCCESS) return std::nullopt;
  return static_cast<long long>(value);
}

template <typename T>
void write_as(MPI_T_cvar_handle handle, long long value) {
  T typed = static_cast<T>(value);
  MPI_T_cvar_write(handle, &typed);
}

}  // namespace

ControlVariable::ControlVariable(const std::string& name) {
  // At MPI's own thread level: Open MPI 4.1 takes MPI_T's level for MPI_Query_thread's.
  int level = MPI_THREAD_SINGLE, provided = 0;
  if (MPI_Query_thread(&level) != MPI_SUCCESS) return;
  if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS) return;
  initialized_ = true;
  int index = 0, count = 0;
  if (MPI_T_cvar_get_index(name.c_str(), &index) != MPI_SUCCESS) return;
  int name_length = 0, description_length = 0, verbosity = 0, bind = 0, scope = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum enumtype = MPI_T_ENUM_NULL;
  if (MPI_T_cvar_get_info(index, nullptr, &name_length, &verbosity, &type, &enumtype, nullptr,
                          &description_length, &bind, &scope) != MPI_SUCCESS) {
    return;
  }
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle_, &count) != MPI_SUCCESS) return;
  if (count == 1) type_ = type;
}

ControlVariable::~ControlVariable() {
  if (handle_ != MPI_T_CVAR_HANDLE_NULL) MPI_T_cvar_handle_free(&handle_);
  if (initialized_) MPI_T_finalize();
}

std::optional<long long> ControlVariable::read() const {
  if (type_ == MPI_INT) return read_as<int>(handle_);
  if (type_ == MPI_UNSIGNED) return read_as<unsigned>(handle_);
  if (type_ == MPI_UNSIGNED_LONG) return read_as<unsigned long>(handle_);
  if (type_ == MPI_UNSIGNED_LONG_LONG) return read_as<unsigned long long>(handle_);
  if (type_ == MPI_LONG) return read_as<long>(handle_);
  if (type_ == MPI_LONG_LONG) return read_as<long long>(handle_);
  return std::nullopt;
}

void ControlVariable::write(long long value) {
  if (type_ == MPI_INT) write_as<int>(handle_, value);
  if (type_ == MPI_UNSIGNED) write_as<unsigned>(handle_, value);
  if (type_ == MPI_UNSIGNED_LONG) write_as<unsigned long>(handle_, value);
  if (type_ == MPI_UNSIGNED_LONG_LONG) write_as<unsigned long long>(handle_, value);
  if (type_ == MPI_LONG) write_as<long>(handle_, value);
  if (type_ == MPI_LONG_LONG) write_as<long long>(handle_, value);
}

}  // namespace mpipe::comm
