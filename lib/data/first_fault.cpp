// FirstFault: the first recorded message, under a mutex.
#include "data/first_fault.h"

namespace mpipe::data {

void FirstFault::record(const InputError& error) {
  const std::lock_guard lock(mutex_);
  if (message_.empty()) message_ = error.what();
}

std::string FirstFault::message() const {
  const std::lock_guard lock(mutex_);
  return message_;
}

}  // namespace mpipe::data
