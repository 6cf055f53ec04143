// Error types and checks: library code throws these, main() reports them and aborts all ranks.
#pragma once

#include <fmt/format.h>

#include <cstdint>
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

// A size that does not fit in 64 bits (a shape's element count, a byte count): bad input, since
// only absurd settings get there. The model builder adds the layer's file, line and key.
class SizeError : public InputError {
 public:
  using InputError::InputError;
};

// a * b and a + b for non-negative sizes, or SizeError naming `what` on overflow.
inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw SizeError(fmt::format("{} overflows 64 bits ({} x {})", what, a, b));
  }
  return product;
}
inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw SizeError(fmt::format("{} overflows 64 bits ({} + {})", what, a, b));
  }
  return sum;
}

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
