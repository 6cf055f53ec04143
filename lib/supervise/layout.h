// A run's layout: K stages x D replicas, each running M micro-batches a step (D·M, the global
// micro-batches, and with them the micro-batch size, stay fixed across a re-plan).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// {"stages": K, "replicas": D, "micro_batches": M}, as the supervisor's records hold it.
nlohmann::ordered_json layout_json(const Layout& layout);

// The --set values that run an experiment on `layout`: pipeline.stages, data_parallel,
// micro_batches, and pipeline.partition=auto when `auto_partition` (its manual partition is for
// another stage count).
std::vector<std::string> layout_settings(const Layout& layout, bool auto_partition);

}  // namespace mpipe::supervise
