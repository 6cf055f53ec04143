// Test helper: the message of the InputError a callable throws, for exact-message assertions.
#pragma once

#include <string>

#include "core/error.h"

namespace mpipe::testing {

// Runs `read` and returns the InputError's message ("" when nothing was thrown).
template <typename Read>
std::string input_error_of(Read read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace mpipe::testing
