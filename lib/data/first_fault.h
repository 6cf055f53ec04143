// FirstFault: the first read fault of a dataset whose files may change under a run, kept for the
// trainer to agree on (Dataset::read_fault); safe to record from several threads.
#pragma once

#include <mutex>
#include <string>

#include "core/error.h"

namespace mpipe::data {

class FirstFault {
 public:
  // Keeps `error`'s message unless a fault was recorded before.
  void record(const InputError& error);
  // The first fault's message, "" while there was none.
  std::string message() const;

 private:
  mutable std::mutex mutex_;
  std::string message_;
};

}  // namespace mpipe::data
