// Text generation: samples tokens from a trained language model, one process: bytes for a
// character-level model, or the pieces of the experiment's SentencePiece tokenizer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "kernels/context.h"
#include "model/layer_spec.h"
#include "tokenize/tokenizer.h"

namespace mpipe::train {

// How one token is drawn from the model's logits.
struct Sampling {
  double temperature = 0.8;  // >= 0; lower is more conservative, 0 = greedy (most likely token)
  int64_t top_k = 0;         // > 0: only the k most likely tokens are drawn (0 = all)
  double top_p = 1.0;        // in (0, 1]: only the fewest most likely tokens whose probabilities
                             // add up to at least top_p are drawn (nucleus sampling; 1 = all)
};

struct GenerateOptions {
  std::string prompt = "\n";
  int64_t length = 200;  // tokens to generate (bytes for a character-level model)
  Sampling sampling;
  uint64_t seed = 1;
};

// An index drawn with the uniform number u in [0, 1): the first largest logit when the
// temperature is 0 (greedy); otherwise the tokens kept by top_k and top_p (ranked by logit, ties
// to the lower index) split [0, 1) in index order in proportion to softmax(logits / temperature).
int64_t sample_index(std::span<const float> logits, const Sampling& sampling, float u);

// Builds the whole model for inputs of `seq_len` tokens, loads `weights` (exported names
// "layers.<i>.<name>") and returns the prompt followed by `length` sampled tokens, as text:
// encoded and decoded by `tokenizer`, or bytes when it is null.
std::string generate_text(const model::ModelSpec& spec, int64_t seq_len,
                          const std::vector<checkpoint::NamedTensor>& weights,
                          const std::string& weights_source, const GenerateOptions& options,
                          kernels::KernelContext& kernels,
                          const tokenize::Tokenizer* tokenizer = nullptr);

}  // namespace mpipe::train
