// Text generation: samples bytes from a trained character-level language model, one process.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "kernels/context.h"
#include "model/layer_spec.h"

namespace mpipe::train {

struct GenerateOptions {
  std::string prompt = "\n";
  int64_t length = 200;      // bytes to generate
  double temperature = 0.8;  // >= 0; lower is more conservative, 0 = greedy (most likely byte)
  uint64_t seed = 1;
};

// An index drawn from softmax(logits / temperature) with the uniform number u in [0, 1); the
// first largest logit when temperature is 0 (greedy decoding).
int64_t sample_index(std::span<const float> logits, double temperature, float u);

// Builds the whole model for inputs of `seq_len` tokens, loads `weights` (exported names
// "layers.<i>.<name>") and returns the prompt followed by `length` sampled bytes.
std::string generate_text(const model::ModelSpec& spec, int64_t seq_len,
                          const std::vector<checkpoint::NamedTensor>& weights,
                          const std::string& weights_source, const GenerateOptions& options,
                          kernels::KernelContext& kernels);

}  // namespace mpipe::train
