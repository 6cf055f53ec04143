// Preflight memory check: settings whose parameters, one micro-batch or dataset alone cannot fit
// in this machine's memory are refused before any allocation, naming the key and the bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/layer_spec.h"
#include "model/model_builder.h"

namespace mpipe::plan {

struct MemoryDemands {
  int optimizer_slots = 0;       // per parameter: 1 for SGD with momentum, 2 for Adam
  int64_t micro_batch_rows = 1;  // examples in one micro-batch
  std::string batch_key;         // "exp.yaml:9: train.batch_size", for the error
  int64_t dataset_bytes = 0;     // what the dataset holds in memory
  std::string dataset_key;       // "exp.yaml:12: data.num_examples"
  int64_t available_bytes = 0;   // this machine's memory
};

// The first demand that alone exceeds available_bytes, as a one-line error: a layer's
// parameters with gradients and optimizer state, one micro-batch's output (and gradient) of
// a layer, or the dataset. A coarse bound, meant to catch impossible settings at once.
std::optional<std::string> memory_problem(const model::ModelSpec& spec,
                                          const model::ModelPlan& plan,
                                          const MemoryDemands& demands);

}  // namespace mpipe::plan
