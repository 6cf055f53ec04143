// A run's layout: K stages x D replicas, each running M micro-batches a step (D·M, the global
// micro-batches, and with them the micro-batch size, stay fixed across a re-plan).
#pragma once

#include <string>

namespace mpipe::supervise {

struct Layout {
  int stages = 1;         // K
  int replicas = 1;       // D
  int micro_batches = 1;  // M, per replica

  int ranks() const { return stages * replicas; }
  bool operator==(const Layout&) const = default;
};

// "2 stages x 1 replica, 4 micro-batches each"
std::string to_string(const Layout& layout);

}  // namespace mpipe::supervise
