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
