// Text generation: samples bytes from a trained character-level language model, one process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "kernels/context.h"
#include "model/layer_spec.h"

namespace mpipe::train {

struct GenerateOptions {
  std::string prompt = "\n";
  int64_t length = 200;      // bytes to generate
  double temperature = 0.8;  // > 0; lower is more conservative
  uint64_t seed = 1;
};

// Builds the whole model for inputs of `seq_len` tokens, loads `weights` (exported names
// "layers.<i>.<name>") and returns the prompt followed by `length` sampled bytes.
std::string generate_text(const model::ModelSpec& spec, int64_t seq_len,
                          const std::vector<checkpoint::NamedTensor>& weights,
                          const std::string& weights_source, const GenerateOptions& options,
                          kernels::KernelContext& kernels);

}  // namespace mpipe::train
