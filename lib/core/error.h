// Error types and checks: library code throws these, main() reports them and aborts all ranks.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace mpipe {

// Any failure mpipe reports to the user. The message is one line, ready to print.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input: a config file, a data file, a checkpoint or a command-line value.
class InputError : public Error {
 public:
  using Error::Error;
};

// An error that every rank of the job knows about (the ranks agreed on it collectively, e.g.
// with comm::agree): each rank can exit non-zero cleanly, rank 0 alone prints the message,
// and no MPI_Abort is needed. `exit_code` is 2 for bad input, 1 otherwise.
class AgreedError : public Error {
 public:
  AgreedError(const std::string& message, int exit_code) : Error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// Throws Error with a formatted message unless `condition` holds.
template <typename... Args>
void check(bool condition, fmt::format_string<Args...> format, Args&&... args) {
  if (!condition) throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Throws InputError with a formatted message unless `condition` holds.
template <typename... Args>
void check_input(bool condition, fmt::format_string<Args...> format, Args&&... args) {
  if (!condition) throw InputError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace mpipe
